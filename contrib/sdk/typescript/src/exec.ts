// One command running in a sandbox: POST .../exec answers with an event
// stream (start, stdout, stderr, exit), read here as an async iterator
// of decoded events; its stdin, signals and terminal size go through
// calls of their own that name the exec's id.
import type { components } from "./openapi.js";
import { QsupError } from "./errors.js";
import { readSse, type SseEvent } from "./sse.js";
import type { Body, Reply } from "./transport.js";

export type ExecRequest = components["schemas"]["ExecRequest"];
export type ExecExit = components["schemas"]["ExecExit"];

/** An event of an exec's stream, its bytes decoded from base64. */
export type ExecEvent =
    | { type: "start"; id: number }
    | { type: "stdout"; data: Buffer }
    | { type: "stderr"; data: Buffer }
    | ({ type: "exit" } & ExecExit);

/** A command run to its end: its exit and all it wrote. */
export interface ExecResult extends ExecExit {
	stdout: Buffer;
	stderr: Buffer;
}

/** What an Exec needs of its client: a call on one of its own paths. */
export interface ExecCaller {
	call(method: string, path: string, body?: Body,
	    type?: string): Promise<void>;
}

export class Exec implements AsyncIterable<ExecEvent> {
	readonly sandbox: string;
	/** The exec's id (its start event's). */
	readonly id: number;
	/** Its exit, once the iterator has reached it. */
	exit: ExecExit | null = null;
	private readonly caller: ExecCaller;
	private readonly reply: Reply;
	private readonly events: AsyncGenerator<SseEvent>;
	private readonly abort: AbortController;
	private taken = false;

	/** @internal Made by Client.exec once the start event is read. */
	constructor(caller: ExecCaller, sandbox: string, id: number,
	    reply: Reply, events: AsyncGenerator<SseEvent>,
	    abort: AbortController) {
		this.caller = caller;
		this.sandbox = sandbox;
		this.id = id;
		this.reply = reply;
		this.events = events;
		this.abort = abort;
	}

	private path(what: string): string {
		return `/v1/sandboxes/${encodeURIComponent(this.sandbox)}` +
		    `/exec/${this.id}/${what}`;
	}

	/**
	 * The events: start, then stdout and stderr as they come, then exit
	 * (the last). Leaving the loop early (break, throw) drops the stream,
	 * and the server kills the command. One iteration per Exec.
	 */
	async *[Symbol.asyncIterator](): AsyncGenerator<ExecEvent> {
		if (this.taken)
			throw new Error(`exec ${this.id}: its events were read already`);
		this.taken = true;
		let done = false;
		try {
			yield { type: "start", id: this.id };
			for await (const ev of this.events) {
				const e = decodeEvent(this.id, ev);
				if (e === null)
					continue;
				if (e.type === "exit") {
					const { type: _, ...exit } = e;
					this.exit = exit;
					done = true;
				}
				yield e;
				if (done)
					return;
			}
			throw new QsupError(0, "POST", this.path(""),
			    `exec ${this.id}: the stream ended without an exit event`);
		} finally {
			if (!done)
				this.cancel();
		}
	}

	/** Reads the stream to its end: the exit and all of the output. */
	async wait(): Promise<ExecResult> {
		const out: Buffer[] = [], err: Buffer[] = [];
		let exit: ExecExit | null = null;
		for await (const e of this) {
			if (e.type === "stdout")
				out.push(e.data);
			else if (e.type === "stderr")
				err.push(e.data);
			else if (e.type === "exit") {
				const { type: _, ...x } = e;
				exit = x;
			}
		}
		return { ...(exit as ExecExit), stdout: Buffer.concat(out),
		    stderr: Buffer.concat(err) };
	}

	/**
	 * Bytes for the command's stdin (the exec made with stdin: true),
	 * streamed; resolves once the command has taken them all. Nothing
	 * to send sends nothing (an empty body would close its stdin).
	 */
	async write(data: string | Uint8Array | AsyncIterable<Uint8Array>):
	    Promise<void> {
		const body = typeof data === "string" ?
		    Buffer.from(data, "utf-8") : data;
		if (body instanceof Uint8Array && body.length === 0)
			return;
		await this.caller.call("POST", this.path("stdin"), body,
		    "application/octet-stream");
	}

	/** Closes the command's stdin: it reads end of file. */
	async closeStdin(): Promise<void> {
		await this.caller.call("POST", this.path("stdin"),
		    new Uint8Array(0), "application/octet-stream");
	}

	/** A signal to the command's process group: "TERM", "SIGINT", 9. */
	async signal(sig: string | number): Promise<void> {
		await this.caller.call("POST", this.path("signal"),
		    jsonBody({ signal: sig }), "application/json");
	}

	/** A new terminal size (an exec made with tty: true). */
	async resize(rows: number, cols: number): Promise<void> {
		await this.caller.call("POST", this.path("resize"),
		    jsonBody({ rows, cols }), "application/json");
	}

	/** Drops the stream: the server kills the command. */
	cancel(): void {
		this.reply.cancel();
		this.abort.abort();
	}
}

export function jsonBody(v: unknown): Uint8Array {
	return Buffer.from(JSON.stringify(v), "utf-8");
}

// One event of the stream as the client shows it; null for an event this
// version does not know (fields and events may be added within /v1).
function decodeEvent(id: number, ev: SseEvent): ExecEvent | null {
	switch (ev.event) {
	case "stdout":
	case "stderr":
		return { type: ev.event, data: Buffer.from(ev.data, "base64") };
	case "exit": {
		let x: ExecExit;
		try {
			x = JSON.parse(ev.data) as ExecExit;
		} catch {
			throw new QsupError(0, "POST", "exec",
			    `exec ${id}: its exit event is not JSON: ` +
			    ev.data.slice(0, 200));
		}
		return { type: "exit", ...x };
	}
	default:
		return null;
	}
}
