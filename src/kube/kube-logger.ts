/**
 * The logging the kube/ modules need, as an interface: pino's Logger satisfies it (its `LogFn`
 * accepts `(obj, msg)`), and a test can pass a recorder. Declared here rather than importing
 * pino so that kube/ does not depend on the logging library the composition root picks.
 */
export interface KubeLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
