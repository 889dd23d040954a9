// The one error the client throws for a call that did not succeed: the
// server's status and its JSON error object ({"error", "field", "limit",
// "max", "console_tail"}), or status 0 when no server answered at all.
import type { components } from "./openapi.js";

export type ErrorBody = components["schemas"]["Error"];

export class QsupError extends Error {
	/** The HTTP status; 0 when the server could not be reached. */
	readonly status: number;
	readonly method: string;
	readonly path: string;
	/** The request field the server refused, when it names one. */
	readonly field?: string;
	/** The server limit reached (503), and its value. */
	readonly limit?: string;
	readonly max?: number;
	/** A create that failed: the console's last lines. */
	readonly consoleTail?: string | null;
	/** The error object as the server sent it (null: not JSON). */
	readonly body: ErrorBody | null;

	constructor(status: number, method: string, path: string,
	    message: string, body: ErrorBody | null = null, cause?: unknown) {
		super(message, cause === undefined ? undefined : { cause });
		this.name = "QsupError";
		this.status = status;
		this.method = method;
		this.path = path;
		this.body = body;
		if (body !== null) {
			this.field = body.field;
			this.limit = body.limit;
			this.max = body.max;
			this.consoleTail = body.console_tail;
		}
	}
}

// An answer that is not a success, turned into a QsupError: the server's
// "error" when the body is its error object, else the status and the
// first bytes of whatever came (a proxy's page, say).
export function errorFromBody(status: number, method: string, path: string,
    text: string): QsupError {
	let body: ErrorBody | null = null;
	try {
		const v = JSON.parse(text);
		if (v !== null && typeof v === "object" &&
		    typeof v.error === "string")
			body = v as ErrorBody;
	} catch {
		/* not JSON: said below */
	}
	const msg = body !== null ? body.error :
	    `${method} ${path}: HTTP ${status}` +
	    (text.length > 0 ? `: ${text.slice(0, 200)}` : "");
	return new QsupError(status, method, path, msg, body);
}
