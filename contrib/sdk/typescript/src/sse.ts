// A reader of Server-Sent Events (the WHATWG "event stream" format) over
// any byte stream: lines end in CRLF, LF or CR, "data:" lines are joined
// with LF, comments (":" lines, qsup's keep-alives) are skipped. A line
// is bounded, so a server or proxy that never ends one cannot grow the
// buffer without end.

export interface SseEvent {
	/** The "event:" field; "message" when there was none. */
	event: string;
	data: string;
	id?: string;
}

const MAX_LINE = 64 * 1024 * 1024;

export async function* readSse(body: AsyncIterable<Uint8Array>,
    maxLine: number = MAX_LINE): AsyncGenerator<SseEvent> {
	const dec = new TextDecoder("utf-8");
	let buf = "";
	let event = "", id: string | undefined, data: string[] = [];
	let any = false;

	// One line of the stream; an event when it is the blank one.
	function line(l: string): SseEvent | null {
		if (l === "") {
			if (!any)
				return null;
			const ev: SseEvent = { event: event || "message",
			    data: data.join("\n") };
			if (id !== undefined)
				ev.id = id;
			event = "";
			data = [];
			any = false;
			return ev;
		}
		if (l.startsWith(":"))
			return null;
		const colon = l.indexOf(":");
		const name = colon === -1 ? l : l.slice(0, colon);
		let value = colon === -1 ? "" : l.slice(colon + 1);
		if (value.startsWith(" "))
			value = value.slice(1);
		if (name === "event") {
			event = value;
			any = true;
		} else if (name === "data") {
			data.push(value);
			any = true;
		} else if (name === "id")
			id = value;
		return null;
	}

	let end = false;
	const it = body[Symbol.asyncIterator]();
	try {
		while (!end) {
			const r = await it.next();
			if (r.done) {
				end = true;
				buf += dec.decode();
			} else
				buf += dec.decode(r.value, { stream: true });
			let start = 0;
			for (let i = 0; i < buf.length; i++) {
				const c = buf.charCodeAt(i);
				if (c !== 10 && c !== 13)
					continue;
				// A CR last in the buffer may be a CRLF cut in two.
				if (c === 13 && i + 1 === buf.length && !end)
					break;
				const ev = line(buf.slice(start, i));
				if (c === 13 && buf.charCodeAt(i + 1) === 10)
					i++;
				start = i + 1;
				if (ev !== null)
					yield ev;
			}
			buf = buf.slice(start);
			if (buf.length > maxLine)
				throw new Error(`event stream: a line of more than ` +
				    `${maxLine} characters`);
		}
		// A stream that ends without the blank line drops the partial
		// event, as the format says.
	} finally {
		if (!end)
			await it.return?.();
	}
}
