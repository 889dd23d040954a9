// @qsup/sdk: a client of qsup serve's REST + SSE API.
export { Client, CommandError, type ClientOptions, type Sandbox,
    type SandboxCreate, type SandboxPatch, type DeleteReport, type Snapshot,
    type ForkRequest, type ForkResult, type FileWritten, type Health,
    type ServerEvent } from "./client.js";
export { Exec, type ExecEvent, type ExecExit, type ExecRequest,
    type ExecResult } from "./exec.js";
export { QsupError, type ErrorBody } from "./errors.js";
export { readSse, type SseEvent } from "./sse.js";
export type { components, paths, operations } from "./openapi.js";
