# syntax=docker/dockerfile:1
#
# tolerator: build with dev dependencies, run with production dependencies only.
#
# Node.js 22 (LTS): Node 20 reached end of life in April 2026. The code supports >=20.19
# (package.json engines), so the runtime line is a choice of support window, not of features.
# An exact x.y.z tag so a rebuild gets the same runtime; bump it deliberately for security releases
# (or pin the digest as well, node:22.21.1-bookworm-slim@sha256:…, for byte-identical rebuilds).
# Both stages use the same image, so the compiled output runs on the Node that built it.

FROM node:22.21.1-bookworm-slim AS build
WORKDIR /app
# Manifests first: the dependency layer is reused until package*.json changes. .npmrc (omit=peer)
# keeps the helm test binary's unused peer aws-cdk-lib (~160 MB) out, as it does on a developer's
# machine.
COPY package.json package-lock.json .npmrc ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src/ ./src/
# tsc -p tsconfig.build.json → dist/
RUN npm run build

FROM node:22.21.1-bookworm-slim AS runtime
# The git revision, for tolerator_build_info and `tolerator --version` (src/build-info.ts):
# `--build-arg REVISION=$(git rev-parse HEAD)`. The version comes from package.json.
ARG REVISION=unknown
ENV NODE_ENV=production
ENV TOLERATOR_REVISION=$REVISION
LABEL org.opencontainers.image.revision=$REVISION org.opencontainers.image.licenses=Apache-2.0
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only, from the lock file; no lifecycle scripts (no runtime dependency
# needs one, and none then runs at build time); no npm cache left in the layer.
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
# Only the compiled output leaves the build stage: no sources, no dev dependencies, no tests.
COPY --from=build /app/dist/ ./dist/
# Example tenancy policies and ValidatingAdmissionPolicy twins (README, "Dedicated-node tenancy"); the Deployment mounts
# its own policies at /etc/tolerator/policies.
COPY policies/ ./policies/
# 65532:65532, numeric: the kubelet can only verify runAsNonRoot for a numeric user (the Deployment
# sets the same ids). Files above stay root-owned, so the process cannot modify its own code.
USER 65532:65532
# HTTPS: /mutate, /validate, /healthz, /readyz, /metrics.
EXPOSE 8443
# The regexp flag lets V8 fall back to its linear-time engine when a JavaScript regular expression
# backtracks excessively. Nothing depends on it for safety any more (CEL's regex functions run on
# RE2, src/tenancy/cel.ts; tenant strings are checked by hand-written scans): a second line, harmless.
ENTRYPOINT ["node", "--enable-experimental-regexp-engine-on-excessive-backtracks", "dist/main.js"]
CMD ["serve"]
