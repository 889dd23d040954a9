// A client of qsup serve's API (docs/openapi.json): sandboxes, execs,
// files, snapshots, fork and the server's event stream. It finds the
// server and its token as `qsup client` does: QSUP_HOST (unix:PATH,
// http://HOST:PORT, https://HOST:PORT, tcp:ADDR:PORT), QSUP_TOKEN, else
// the file QSUP_TOKEN_FILE names, else the server's default token file.
import { readFileSync } from "node:fs";
import type { components } from "./openapi.js";
import { QsupError, errorFromBody } from "./errors.js";
import { readSse } from "./sse.js";
import { Exec, jsonBody, type ExecCaller, type ExecRequest,
    type ExecResult } from "./exec.js";
import { FetchTransport, UnixTransport, type Body, type Reply,
    type Transport } from "./transport.js";

type S = components["schemas"];
export type Sandbox = S["Sandbox"];
export type SandboxCreate = S["SandboxCreate"];
export type SandboxPatch = S["SandboxPatch"];
export type DeleteReport = S["DeleteReport"];
export type Snapshot = S["Snapshot"];
export type ForkRequest = S["ForkRequest"];
export type ForkResult = S["ForkResult"];
export type FileWritten = S["FileWritten"];
export type Health = S["Health"];

/** An event of GET /v1/events. */
export type ServerEvent =
    | { type: "sandbox"; data: S["SandboxEvent"] }
    | { type: "exec"; data: S["ExecEvent"] }
    | { type: "ttl"; data: S["TtlEvent"] }
    | { type: "snapshot"; data: S["Snapshot"] };

export interface ClientOptions {
	/** unix:PATH, http://HOST:PORT, https://HOST:PORT or tcp:ADDR:PORT. */
	host?: string;
	token?: string;
	tokenFile?: string;
}

// Where qsup serve keeps its socket and token by default.
function runDir(): string {
	const x = process.env.XDG_RUNTIME_DIR;
	if (x !== undefined && x !== "")
		return `${x}/qsup`;
	return `/tmp/qsup-${process.getuid?.() ?? 0}`;
}

function env(name: string): string | undefined {
	const v = process.env[name];
	return v === undefined || v === "" ? undefined : v;
}

function makeTransport(host: string): Transport {
	if (host.startsWith("unix:")) {
		if (host.length === 5)
			throw new Error(`${host}: no socket path after unix:`);
		return new UnixTransport(host.slice(5));
	}
	if (/^tcp:[^/]+$/.test(host))
		return new FetchTransport(`http://${host.slice(4)}`);
	if (/^https?:\/\/[^/?#]+\/*$/.test(host))
		return new FetchTransport(host);
	throw new Error(`${host}: not a host (unix:PATH, http://HOST:PORT ` +
	    `or https://HOST:PORT)`);
}

async function readAll(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
	const parts: Buffer[] = [];
	for await (const c of body)
		parts.push(Buffer.from(c));
	return Buffer.concat(parts);
}

function sb(name: string): string {
	return `/v1/sandboxes/${encodeURIComponent(name)}`;
}

// A file helper's command, which runs by argv and never through a shell
// (a path is one argument whatever it holds), thrown when it failed.
function checkResult(what: string, r: ExecResult): void {
	if (r.status === 0)
		return;
	const why = r.stderr.toString("utf-8").trim() ||
	    r.error || `exit status ${r.status}, signal ${r.signal}`;
	throw new CommandError(`${what}: ${why}`, r);
}

/** A file helper's command failed in the guest. */
export class CommandError extends Error {
	readonly result: ExecResult;

	constructor(message: string, result: ExecResult) {
		super(message);
		this.name = "CommandError";
		this.result = result;
	}
}

export class Client implements ExecCaller {
	readonly host: string;
	private readonly token?: string;
	private readonly tokenCause?: string;
	private readonly transport: Transport;

	constructor(opts: ClientOptions = {}) {
		this.host = opts.host ?? env("QSUP_HOST") ??
		    `unix:${runDir()}/qsup.sock`;
		this.transport = makeTransport(this.host);
		let token = opts.token ??
		    (opts.tokenFile === undefined ? env("QSUP_TOKEN") : undefined);
		if (token === undefined) {
			const file = opts.tokenFile ?? env("QSUP_TOKEN_FILE") ??
			    `${runDir()}/token`;
			try {
				token = readFileSync(file, "utf-8").trimEnd();
				if (token === "") {
					token = undefined;
					this.tokenCause = `no token: ${file} is empty`;
				}
			} catch (e) {
				this.tokenCause = `no token: QSUP_TOKEN is not set ` +
				    `and ${file}: ${(e as Error).message}`;
			}
		}
		this.token = token;
	}

	/** Lets go of kept-alive connections now (idle ones never hold the
	 * process: calling it is not needed for node to exit). */
	close(): void {
		this.transport.close();
	}

	// One request; an answer of 400 or more is thrown as a QsupError.
	private async send(method: string, path: string, body?: Body,
	    type?: string, signal?: AbortSignal): Promise<Reply> {
		const headers: Record<string, string> = {};
		if (this.token !== undefined)
			headers["Authorization"] = `Bearer ${this.token}`;
		if (type !== undefined)
			headers["Content-Type"] = type;
		let reply: Reply;
		try {
			reply = await this.transport.request({ method, path,
			    headers, body, signal });
		} catch (e) {
			if ((e as Error).name === "AbortError")
				throw e;
			const c = (e as { cause?: Error }).cause ?? (e as Error);
			throw new QsupError(0, method, path, `no qsup serve at ` +
			    `${this.host}: ${c.message}`, null, e);
		}
		if (reply.status >= 400) {
			const text = (await readAll(reply.body)).toString("utf-8");
			const err = errorFromBody(reply.status, method, path, text);
			if (reply.status === 401 && this.tokenCause !== undefined)
				err.message += ` (${this.tokenCause})`;
			throw err;
		}
		return reply;
	}

	/** @internal A call whose answer has no body worth reading. */
	async call(method: string, path: string, body?: Body,
	    type?: string): Promise<void> {
		const r = await this.send(method, path, body, type);
		await readAll(r.body);
	}

	private async json<T>(method: string, path: string,
	    body?: unknown): Promise<T> {
		const r = await this.send(method, path,
		    body === undefined ? undefined : jsonBody(body),
		    body === undefined ? undefined : "application/json");
		const text = (await readAll(r.body)).toString("utf-8");
		return (text === "" ? undefined : JSON.parse(text)) as T;
	}

	/** GET /v1/healthz (no token needed). */
	health(): Promise<Health> {
		return this.json("GET", "/v1/healthz");
	}

	/** The server's own OpenAPI document. */
	openapi(): Promise<Record<string, unknown>> {
		return this.json("GET", "/v1/openapi.json");
	}

	readonly sandboxes = {
		/** Resolves once it is ready (201), or booting with wait: false. */
		create: (req: SandboxCreate = {}): Promise<Sandbox> =>
		    this.json("POST", "/v1/sandboxes", req),
		list: async (): Promise<Sandbox[]> =>
		    (await this.json<S["SandboxList"]>("GET",
		    "/v1/sandboxes")).sandboxes,
		get: (name: string): Promise<Sandbox> =>
		    this.json("GET", sb(name)),
		/** Its ttl, idle_ttl, on_ttl; null or 0 lifts a limit. */
		patch: (name: string, req: SandboxPatch): Promise<Sandbox> =>
		    this.json("PATCH", sb(name), req),
		/** Resolves once its QEMU is gone; quit: end an attached QEMU. */
		delete: (name: string, opts: { quit?: boolean } = {}):
		    Promise<DeleteReport> => this.json("DELETE", sb(name) +
		    (opts.quit === undefined ? "" : `?quit=${opts.quit}`)),
		pause: (name: string): Promise<Sandbox> =>
		    this.json("POST", `${sb(name)}/pause`),
		resume: (name: string): Promise<Sandbox> =>
		    this.json("POST", `${sb(name)}/resume`),
		/** Saves it whole as snapshot `snapshot`. */
		snapshot: (name: string, snapshot: string): Promise<Snapshot> =>
		    this.json("POST", `${sb(name)}/snapshots`, { name: snapshot }),
		/** Running copies: { count } or { names }, and machine_id. */
		fork: (name: string, req: ForkRequest = {}): Promise<ForkResult> =>
		    this.json("POST", `${sb(name)}/fork`, req),
		/** An attached QEMU's snapshot loaded back into it. */
		load: (name: string, snapshot: string): Promise<Sandbox> =>
		    this.json("POST", `${sb(name)}/restore`, { snapshot })
	};

	readonly snapshots = {
		list: async (): Promise<Snapshot[]> =>
		    (await this.json<S["SnapshotList"]>("GET",
		    "/v1/snapshots")).snapshots,
		get: (snap: string): Promise<Snapshot> =>
		    this.json("GET", `/v1/snapshots/${encodeURIComponent(snap)}`),
		delete: (snap: string): Promise<void> =>
		    this.json("DELETE", `/v1/snapshots/${encodeURIComponent(snap)}`)
	};

	/**
	 * Starts a command: resolves with its Exec once the server has sent
	 * its start event (its id); iterate it for the output and the exit.
	 */
	async exec(name: string, req: ExecRequest): Promise<Exec> {
		const abort = new AbortController();
		const path = `${sb(name)}/exec`;
		const reply = await this.send("POST", path, jsonBody(req),
		    "application/json", abort.signal);
		const events = readSse(reply.body);
		const first = await events.next();
		if (first.done || first.value.event !== "start") {
			reply.cancel();
			throw new QsupError(0, "POST", path, `exec in ${name}: ` +
			    `the stream did not begin with a start event`);
		}
		const id = (JSON.parse(first.value.data) as S["ExecStart"]).id;
		return new Exec(this, name, id, reply, events, abort);
	}

	/**
	 * Runs a command to its end: its exit and output. With `stdin`, that
	 * is the command's stdin, then end of file.
	 */
	async run(name: string, cmd: string[] | ExecRequest,
	    opts: { stdin?: string | Uint8Array } = {}): Promise<ExecResult> {
		const req: ExecRequest = Array.isArray(cmd) ? { argv: cmd } :
		    { ...cmd };
		if (opts.stdin !== undefined)
			req.stdin = true;
		const ex = await this.exec(name, req);
		if (opts.stdin === undefined)
			return ex.wait();
		const done = ex.wait();
		// The output is read while stdin is sent: a command that writes
		// before it has read all of its input must not wait on us.
		// A command that ends without taking it all is no error: 409
		// while the server holds the exec, 404 once it has let it go.
		const fed = ex.write(opts.stdin).then(() => ex.closeStdin())
		    .catch((e) => {
			if (e instanceof QsupError && (e.status === 409 ||
			    e.status === 404))
				return;
			throw e;
		    });
		const [r] = await Promise.all([done, fed.catch((e) => {
			ex.cancel();
			throw e;
		})]);
		return r;
	}

	readonly files = {
		/** A file of the guest, whole. */
		read: async (name: string, path: string): Promise<Buffer> =>
		    readAll(await this.files.readStream(name, path)),
		/** A file of the guest as a stream of bytes. */
		readStream: async (name: string, path: string):
		    Promise<AsyncIterable<Uint8Array>> =>
		    (await this.send("GET", `${sb(name)}/files?path=` +
		    encodeURIComponent(path))).body,
		/** Writes the file whole or not at all; mode 0644 by default. */
		write: (name: string, path: string,
		    data: string | Uint8Array | AsyncIterable<Uint8Array>,
		    opts: { mode?: number | string } = {}): Promise<FileWritten> =>
		    this.writeFile(name, path, data, opts.mode),
		/** A directory's entries, directories ending in "/" (ls -1Ap). */
		list: async (name: string, path: string): Promise<string[]> => {
			const r = await this.run(name, ["ls", "-1Ap", "--", path]);
			checkResult(`list ${path}`, r);
			return r.stdout.toString("utf-8").split("\n")
			    .filter((l) => l !== "");
		},
		mkdir: async (name: string, path: string,
		    opts: { parents?: boolean } = {}): Promise<void> => {
			checkResult(`mkdir ${path}`, await this.run(name,
			    ["mkdir", ...(opts.parents ? ["-p"] : []), "--", path]));
		},
		/** rm -f; recursive: rm -rf. */
		remove: async (name: string, path: string,
		    opts: { recursive?: boolean } = {}): Promise<void> => {
			checkResult(`remove ${path}`, await this.run(name,
			    ["rm", opts.recursive ? "-rf" : "-f", "--", path]));
		}
	};

	private async writeFile(name: string, path: string,
	    data: string | Uint8Array | AsyncIterable<Uint8Array>,
	    mode?: number | string): Promise<FileWritten> {
		let q = `${sb(name)}/files?path=${encodeURIComponent(path)}`;
		if (mode !== undefined)
			q += `&mode=${typeof mode === "number" ?
			    mode.toString(8) : mode}`;
		const body = typeof data === "string" ?
		    Buffer.from(data, "utf-8") : data;
		const r = await this.send("PUT", q, body,
		    "application/octet-stream");
		return JSON.parse((await readAll(r.body)).toString("utf-8"));
	}

	/**
	 * The server's events: one sandbox event for each sandbox there, then
	 * each change as it happens. Leaving the loop closes the stream; so
	 * does `signal` (the loop then just ends). Events this version does not
	 * know are skipped.
	 */
	async *events(opts: { signal?: AbortSignal } = {}):
	    AsyncGenerator<ServerEvent> {
		const sig = opts.signal;
		let reply: Reply;
		try {
			reply = await this.send("GET", "/v1/events", undefined,
			    undefined, sig);
		} catch (e) {
			if (sig?.aborted)
				return;
			throw e;
		}
		try {
			for await (const ev of readSse(reply.body)) {
				switch (ev.event) {
				case "sandbox":
				case "exec":
				case "ttl":
				case "snapshot":
					yield { type: ev.event,
					    data: JSON.parse(ev.data) } as ServerEvent;
				}
			}
		} catch (e) {
			// An abort is the caller's end of the stream, not an error
			// (node:http says "aborted", fetch an AbortError).
			if (!sig?.aborted)
				throw e;
		} finally {
			reply.cancel();
		}
	}
}
