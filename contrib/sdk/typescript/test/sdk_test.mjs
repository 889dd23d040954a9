// The SDK against a real qsup serve (tests/integration/sdk_typescript_test.sh
// starts it and sets QSUP_HOST and QSUP_TOKEN_FILE): node sdk_test.mjs GROUP.
// Each check prints "ok NAME" or "FAIL NAME: why"; the exit status is the
// number of failed checks.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Client, QsupError, CommandError, readSse } from "../dist/index.js";

const qsup = new Client();
let failed = 0;

async function check(name, fn) {
	try {
		await fn();
		console.log(`    ok   ${name}`);
	} catch (e) {
		failed++;
		console.log(`    FAIL ${name}: ${e && e.stack ? e.stack : e}`);
	}
}

// The QsupError fn throws, checked for status (and a message pattern).
async function refused(fn, status, re) {
	let err = null;
	try {
		await fn();
	} catch (e) {
		err = e;
	}
	assert.ok(err instanceof QsupError, `expected a QsupError, got ${err}`);
	assert.equal(err.status, status, err.message);
	if (re !== undefined)
		assert.match(err.message, re);
	return err;
}

async function* chunks(buf, n) {
	for (let i = 0; i < buf.length; i += n)
		yield buf.subarray(i, i + n);
}

async function basic() {
	const seen = [];
	const stop = new AbortController();
	const watching = (async () => {
		try {
			for await (const ev of qsup.events({ signal: stop.signal }))
				seen.push(ev);
		} catch (e) {
			if (e.name !== "AbortError")
				seen.push({ type: "error", data: String(e) });
		}
	})();

	await check("health", async () => {
		const h = await qsup.health();
		assert.equal(h.ok, true);
	});
	await check("create with its fields", async () => {
		const sb = await qsup.sandboxes.create({ name: "t1", ttl: 600,
		    idle_ttl: 300, on_ttl: "pause" });
		assert.equal(sb.name, "t1");
		assert.equal(sb.state, "ready");
		assert.equal(sb.ttl, 600);
		assert.equal(sb.idle_ttl, 300);
		assert.equal(sb.on_ttl, "pause");
		assert.ok(sb.ttl_left > 0 && sb.ttl_left <= 600);
	});
	await check("list and get", async () => {
		const l = await qsup.sandboxes.list();
		assert.deepEqual(l.map((s) => s.name), ["t1"]);
		assert.equal((await qsup.sandboxes.get("t1")).state, "ready");
	});
	await check("patch lifts the limits", async () => {
		const sb = await qsup.sandboxes.patch("t1", { ttl: null,
		    idle_ttl: 0, on_ttl: "delete" });
		assert.equal(sb.ttl_deadline, null);
		assert.equal(sb.idle_deadline, null);
		assert.equal(sb.on_ttl, "delete");
	});
	await check("run echo", async () => {
		const r = await qsup.run("t1", ["echo", "hello", "world"]);
		assert.equal(r.stdout.toString(), "hello world\n");
		assert.equal(r.status, 0);
		assert.equal(r.signal, null);
	});
	await check("cat of stdin", async () => {
		const r = await qsup.run("t1", ["cat"], { stdin: "abc\n" });
		assert.equal(r.stdout.toString(), "abc\n");
		assert.equal(r.status, 0);
	});
	await check("300000 bytes of stdin, streamed", async () => {
		const ex = await qsup.exec("t1", { argv: ["wc", "-c"], stdin: true });
		const done = ex.wait();
		await ex.write(chunks(randomBytes(300000), 65536));
		await ex.closeStdin();
		const r = await done;
		assert.equal(r.stdout.toString().trim(), "300000");
	});
	await check("a failing exit status and stderr", async () => {
		const r = await qsup.run("t1", ["sh", "-c", "echo oops >&2; exit 7"]);
		assert.equal(r.status, 7);
		assert.equal(r.stderr.toString(), "oops\n");
		assert.equal(r.stdout.length, 0);
	});
	await check("a command that is not there", async () => {
		const r = await qsup.run("t1", ["/no/such/command"]);
		assert.equal(r.status, 127);
		assert.ok(r.error !== null);
	});
	await check("a long output, streamed in pieces", async () => {
		const ex = await qsup.exec("t1", { argv: ["seq", "1", "200000"] });
		assert.ok(ex.id > 0);
		let pieces = 0, text = [];
		for await (const ev of ex) {
			if (ev.type === "stdout") {
				pieces++;
				text.push(ev.data);
			}
		}
		const lines = Buffer.concat(text).toString().split("\n");
		assert.equal(lines.length, 200001);
		assert.equal(lines[199999], "200000");
		assert.ok(pieces > 1, `${pieces} stdout events`);
		assert.equal(ex.exit.status, 0);
	});
	await check("a signal ends a command", async () => {
		const ex = await qsup.exec("t1", { argv: ["sleep", "60"] });
		const done = ex.wait();
		await ex.signal("TERM");
		const r = await done;
		assert.equal(r.signal, 15);
		assert.equal(r.status, null);
	});
	await check("a command on a terminal, resized", async () => {
		const ex = await qsup.exec("t1", { argv: ["sh", "-c",
		    "test -t 0 && echo on-a-tty; stty size; read x; stty size"],
		    tty: true, stdin: true, rows: 30, cols: 100 });
		let out = "", resized = false;
		for await (const ev of ex) {
			if (ev.type === "stderr")
				assert.fail(`stderr on a tty: ${ev.data}`);
			if (ev.type !== "stdout")
				continue;
			out += ev.data.toString();
			// Resized once it has said its first size, then let go on.
			if (!resized && /30 100/.test(out)) {
				resized = true;
				await ex.resize(40, 120);
				await ex.write("go\n");
			}
		}
		assert.match(out, /on-a-tty\r\n30 100\r\n[\s\S]*40 120\r\n$/);
		assert.equal(ex.exit.status, 0);
	});
	await check("leaving the loop early kills the command", async () => {
		const ex = await qsup.exec("t1", { argv: ["sh", "-c",
		    "echo $$; exec sleep 60"] });
		let pid = "";
		for await (const ev of ex) {
			if (ev.type === "stdout") {
				pid = ev.data.toString().trim();
				break;
			}
		}
		assert.match(pid, /^[0-9]+$/);
		let alive = 0;
		for (let i = 0; i < 100; i++) {
			alive = (await qsup.run("t1", ["kill", "-0", pid])).status;
			if (alive !== 0)
				break;
			await new Promise((ok) => setTimeout(ok, 100));
		}
		assert.notEqual(alive, 0, `process ${pid} still runs`);
	});
	await check("resize without a terminal: 409", async () => {
		const ex = await qsup.exec("t1", { argv: ["sleep", "60"] });
		await refused(() => ex.resize(40, 120), 409);
		ex.cancel();
	});
	await check("file write and read", async () => {
		const w = await qsup.files.write("t1", "/tmp/f.txt", "hello file\n",
		    { mode: 0o600 });
		assert.deepEqual(w, { path: "/tmp/f.txt", size: 11 });
		const b = await qsup.files.read("t1", "/tmp/f.txt");
		assert.equal(b.toString(), "hello file\n");
		const r = await qsup.run("t1", ["ls", "-l", "/tmp/f.txt"]);
		assert.match(r.stdout.toString(), /^-rw------- /);
	});
	await check("a binary file, streamed both ways", async () => {
		const data = randomBytes(500000);
		const w = await qsup.files.write("t1", "/tmp/bin", chunks(data, 70000));
		assert.equal(w.size, data.length);
		const parts = [];
		for await (const c of await qsup.files.readStream("t1", "/tmp/bin"))
			parts.push(c);
		assert.ok(Buffer.concat(parts).equals(data));
	});
	await check("file list, mkdir, remove", async () => {
		await qsup.files.mkdir("t1", "/tmp/d/e", { parents: true });
		await qsup.files.write("t1", "/tmp/d/x", "x");
		assert.deepEqual(await qsup.files.list("t1", "/tmp/d"), ["e/", "x"]);
		assert.ok((await qsup.files.list("t1", "/tmp")).includes("f.txt"));
		await qsup.files.remove("t1", "/tmp/d", { recursive: true });
		assert.ok(!(await qsup.files.list("t1", "/tmp")).includes("d/"));
		await assert.rejects(qsup.files.list("t1", "/tmp/d"), CommandError);
	});
	await check("errors: 404", async () => {
		const e = await refused(() => qsup.sandboxes.get("nope"), 404,
		    /no sandbox named nope/);
		assert.equal(e.body.error, e.message);
		await refused(() => qsup.files.read("t1", "/tmp/none"), 404);
		await refused(() => qsup.run("nope", ["true"]), 404);
		await refused(() => qsup.sandboxes.delete("nope"), 404);
	});
	await check("errors: 409 and 400 with the field", async () => {
		await refused(() => qsup.sandboxes.create({ name: "t1" }), 409);
		const e = await refused(() => qsup.sandboxes.create(
		    { name: "Bad Name" }), 400);
		assert.equal(e.field, "name");
		await refused(() => qsup.files.read("t1", "/tmp"), 409);
	});
	await check("errors: 401 with a wrong token", async () => {
		const c = new Client({ host: qsup.host, token: "x".repeat(32) });
		await refused(() => c.sandboxes.list(), 401);
		c.close();
	});
	await check("errors: no server", async () => {
		const c = new Client({ host: "unix:/nonexistent/qsup.sock",
		    token: "x" });
		const e = await refused(() => c.sandboxes.list(), 0,
		    /no qsup serve at unix:\/nonexistent/);
		c.close();
	});
	await check("delete", async () => {
		const r = await qsup.sandboxes.delete("t1");
		assert.equal(r.name, "t1");
		assert.equal(r.state, "deleted");
		await refused(() => qsup.sandboxes.get("t1"), 404);
	});
	await check("the server's events", async () => {
		for (let i = 0; i < 50 && !seen.some((e) => e.type === "sandbox" &&
		    e.data.state === "deleted"); i++)
			await new Promise((ok) => setTimeout(ok, 100));
		stop.abort();
		await watching;
		const states = seen.filter((e) => e.type === "sandbox" &&
		    e.data.name === "t1").map((e) => e.data.state);
		assert.ok(states.includes("ready"), JSON.stringify(states));
		assert.equal(states[states.length - 1], "deleted");
		assert.ok(seen.some((e) => e.type === "exec" &&
		    e.data.sandbox === "t1" && e.data.state === "exited"));
		assert.ok(!seen.some((e) => e.type === "error"),
		    JSON.stringify(seen.filter((e) => e.type === "error")));
	});
}

async function state() {
	await check("create", async () => {
		await qsup.sandboxes.create({ name: "a" });
		await qsup.run("a", ["sh", "-c", "echo kept >/tmp/keep"]);
	});
	await check("pause: no exec while paused, resume", async () => {
		assert.equal((await qsup.sandboxes.pause("a")).state, "paused");
		assert.equal((await qsup.sandboxes.get("a")).state, "paused");
		await refused(() => qsup.run("a", ["true"]), 409, /paused/);
		assert.equal((await qsup.sandboxes.resume("a")).state, "ready");
		assert.equal((await qsup.run("a", ["cat", "/tmp/keep"]))
		    .stdout.toString(), "kept\n");
	});
	await check("snapshot, listed, got", async () => {
		const s = await qsup.sandboxes.snapshot("a", "s1");
		assert.equal(s.name, "s1");
		assert.equal(s.sandbox, "a");
		assert.ok(s.size_bytes > 0);
		const l = await qsup.snapshots.list();
		assert.deepEqual(l.map((x) => x.name), ["s1"]);
		assert.equal((await qsup.snapshots.get("s1")).sandbox, "a");
		await refused(() => qsup.sandboxes.snapshot("a", "s1"), 409);
		await refused(() => qsup.snapshots.get("nope"), 404);
	});
	await check("create from a snapshot", async () => {
		const b = await qsup.sandboxes.create({ name: "b", snapshot: "s1" });
		assert.equal(b.start, "snapshot");
		assert.equal(b.state, "ready");
		assert.equal((await qsup.files.read("b", "/tmp/keep")).toString(),
		    "kept\n");
		await refused(() => qsup.sandboxes.create({ name: "c",
		    snapshot: "nope" }), 404);
		await qsup.sandboxes.delete("b");
	});
	await check("snapshot delete", async () => {
		assert.equal(await qsup.snapshots.delete("s1"), undefined);
		await refused(() => qsup.snapshots.get("s1"), 404);
		assert.deepEqual(await qsup.snapshots.list(), []);
	});
	await check("fork", async () => {
		await qsup.run("a", ["sh", "-c", "echo forked >/tmp/keep"]);
		const f = await qsup.sandboxes.fork("a", { names: ["a-copy"] });
		assert.equal(f.source, "a");
		assert.deepEqual(f.sandboxes.map((s) => s.name), ["a-copy"]);
		assert.equal((await qsup.files.read("a-copy", "/tmp/keep"))
		    .toString(), "forked\n");
		await qsup.files.write("a-copy", "/tmp/keep", "mine\n");
		assert.equal((await qsup.files.read("a", "/tmp/keep")).toString(),
		    "forked\n");
		await refused(() => qsup.sandboxes.fork("nope"), 404);
		await qsup.sandboxes.delete("a-copy");
	});
	await check("persistent", async () => {
		const p = await qsup.sandboxes.create({ name: "p",
		    persistent: true, persist_every: 60, idle_ttl: 120,
		    on_ttl: "pause" });
		assert.equal(p.persistent, true);
		assert.equal(p.persist_every, 60);
		assert.equal(p.idle_ttl, 120);
		const e = await refused(() => qsup.sandboxes.create({ name: "q",
		    persistent: "yes" }), 400);
		assert.equal(e.field, "persistent");
		await qsup.sandboxes.delete("p");
	});
	await check("delete", async () => {
		assert.equal((await qsup.sandboxes.delete("a")).state, "deleted");
		assert.deepEqual(await qsup.sandboxes.list(), []);
	});
}

// The event-stream reader alone, on a stream cut at every byte: line ends
// CRLF (a CRLF cut in two), LF and CR, comments, multi-line data, an
// event without a name, a last event without its blank line (dropped).
async function sse() {
	const text = ": keep-alive\r\nevent: stdout\r\ndata: aGk=\r\n\r\n" +
	    "data: one\ndata: two\n\nevent:exit\rdata:{\"status\":0}\r\r" +
	    "event: cut\ndata: never";
	const want = [{ event: "stdout", data: "aGk=" },
	    { event: "message", data: "one\ntwo" },
	    { event: "exit", data: "{\"status\":0}" }];
	for (const size of [1, 2, 3, 7, text.length]) {
		await check(`sse reader, ${size}-byte pieces`, async () => {
			const bytes = Buffer.from(text);
			const got = [];
			for await (const ev of readSse(chunks(bytes, size)))
				got.push(ev);
			assert.deepEqual(got, want);
		});
	}
	await check("sse reader: a line without end is refused", async () => {
		await assert.rejects(async () => {
			for await (const _ of readSse(chunks(Buffer.alloc(5000, 97),
			    100), 1000))
				;
		}, /a line of more than 1000 characters/);
	});
}

const groups = { basic, state, sse };
if (groups[process.argv[2]] === undefined) {
	console.log(`usage: node sdk_test.mjs ${Object.keys(groups).join("|")}`);
	process.exit(2);
}
await groups[process.argv[2]]();
qsup.close();
process.exit(failed);
