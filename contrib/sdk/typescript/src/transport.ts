// How requests reach the server. TCP (qsup serve --listen tcp:ADDR:PORT,
// http:// or https://) goes through the global fetch; the unix socket
// qsup serve listens on by default goes through node:http's socketPath,
// which fetch cannot speak. Both give the same Reply: a status, headers
// and the body as a stream of bytes read as it comes.
import * as http from "node:http";

export type Body = Uint8Array | AsyncIterable<Uint8Array>;

export interface Request {
	method: string;
	path: string;
	headers: Record<string, string>;
	body?: Body;
	signal?: AbortSignal;
}

export interface Reply {
	status: number;
	header(name: string): string | null;
	body: AsyncIterable<Uint8Array>;
	/** Stop reading: the connection is dropped. */
	cancel(): void;
}

export interface Transport {
	request(r: Request): Promise<Reply>;
	close(): void;
}

// An async iterable as a web ReadableStream (ReadableStream.from is not
// in Node 18).
function toStream(src: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
	const it = src[Symbol.asyncIterator]();
	return new ReadableStream<Uint8Array>({
		async pull(ctl) {
			const r = await it.next();
			if (r.done)
				ctl.close();
			else
				ctl.enqueue(r.value);
		},
		async cancel() {
			await it.return?.();
		}
	});
}

async function* readerBytes(rs: ReadableStream<Uint8Array> | null):
    AsyncGenerator<Uint8Array> {
	if (rs === null)
		return;
	const reader = rs.getReader();
	try {
		for (;;) {
			const r = await reader.read();
			if (r.done)
				return;
			yield r.value;
		}
	} finally {
		reader.releaseLock();
	}
}

export class FetchTransport implements Transport {
	private readonly base: string;

	constructor(base: string) {
		this.base = base.replace(/\/+$/, "");
	}

	async request(r: Request): Promise<Reply> {
		const init: RequestInit & { duplex?: string } = {
			method: r.method,
			headers: r.headers,
			signal: r.signal
		};
		if (r.body instanceof Uint8Array)
			init.body = r.body as Uint8Array<ArrayBuffer>;
		else if (r.body !== undefined) {
			init.body = toStream(r.body);
			init.duplex = "half";	/* what undici needs for a stream */
		}
		const res = await fetch(this.base + r.path, init);
		return {
			status: res.status,
			header: (n) => res.headers.get(n),
			body: readerBytes(res.body),
			cancel: () => {
				res.body?.cancel().catch(() => undefined);
			}
		};
	}

	close(): void {
		/* undici's idle connections do not hold the process */
	}
}

export class UnixTransport implements Transport {
	private readonly socketPath: string;
	private readonly agent: http.Agent;

	constructor(socketPath: string) {
		this.socketPath = socketPath;
		this.agent = new http.Agent({ keepAlive: true });
	}

	request(r: Request): Promise<Reply> {
		return new Promise((resolve, reject) => {
			const headers: Record<string, string> = { ...r.headers };
			if (r.body instanceof Uint8Array)
				headers["Content-Length"] = String(r.body.length);
			else if (r.body === undefined && r.method !== "GET" &&
			    r.method !== "DELETE")
				headers["Content-Length"] = "0";
			const req = http.request({
				socketPath: this.socketPath,
				path: r.path,
				method: r.method,
				headers,
				agent: this.agent,
				signal: r.signal
			}, (res) => {
				resolve({
					status: res.statusCode ?? 0,
					header: (n) => {
						const v = res.headers[n.toLowerCase()];
						return v === undefined ? null :
						    Array.isArray(v) ? v.join(", ") : v;
					},
					body: res,
					cancel: () => res.destroy()
				});
			});
			req.on("error", reject);
			if (r.body === undefined || r.body instanceof Uint8Array) {
				req.end(r.body);
				return;
			}
			const src = r.body;
			(async () => {
				for await (const chunk of src) {
					if (!req.write(chunk))
						await new Promise<void>((ok, no) => {
							req.once("drain", ok);
							req.once("error", no);
						});
				}
				req.end();
			})().catch((e) => req.destroy(e));
		});
	}

	close(): void {
		this.agent.destroy();
	}
}
