// The e2b SDK (npm e2b@2.51.0), unchanged, against "qsup serve --e2b":
// E2B_API_KEY, E2B_API_URL and E2B_SANDBOX_URL say where (docs/e2b.md).
// One "    ok WHAT" line per check that passed, "    FAIL WHAT: GOT" per
// one that did not; the exit status is the number of failures.
import { Sandbox, CommandExitError } from 'e2b'

let failed = 0
function ok(cond, what, got) {
	if (cond)
		console.log(`    ok ${what}`)
	else {
		failed++
		console.log(`    FAIL ${what}: ${JSON.stringify(got)}`)
	}
}
async function fails(what, fn, test) {
	try {
		const r = await fn()
		ok(false, what, { resolved: r })
	} catch (e) {
		ok(test(e), what, { name: e?.constructor?.name, message: e?.message })
	}
}
// A boot under TCG on a busy host takes longer than the SDK's 60 s.
const slow = { requestTimeoutMs: 600000 }

async function basic() {
	const sbx = await Sandbox.create('base', { timeoutMs: 300000,
	    metadata: { suite: 'e2b', 'k &=%': 'v&=%+ é' }, ...slow })
	ok(/^e2b[0-9a-f]+$/.test(sbx.sandboxId), 'create gives an id', sbx.sandboxId)

	let r = await sbx.commands.run('echo hi')
	ok(r.exitCode === 0 && r.stdout === 'hi\n' && r.stderr === '', 'echo', r)

	r = await sbx.commands.run('echo "$X:$PWD"', { envs: { X: 'y' }, cwd: '/tmp' })
	ok(r.stdout === 'y:/tmp\n', 'envs and cwd', r)

	const h = await sbx.commands.run('cat', { background: true, stdin: true })
	ok(typeof h.pid === 'number' && h.pid > 0, 'background command has a pid', h.pid)
	await sbx.commands.sendStdin(h.pid, 'abc')
	await sbx.commands.sendStdin(h.pid, 'def')
	await sbx.commands.closeStdin(h.pid)
	r = await h.wait()
	ok(r.exitCode === 0 && r.stdout === 'abcdef', 'stdin through cat', r)

	await fails('a failing command throws CommandExitError with its status',
	    () => sbx.commands.run('echo bad >&2; exit 3'),
	    (e) => e instanceof CommandExitError && e.exitCode === 3 &&
	    e.stderr === 'bad\n')

	// Output as it comes: the first line long before the command ends.
	const chunks = []
	let tFirst = 0
	const t0 = Date.now()
	r = await sbx.commands.run('echo first; sleep 3; i=0; ' +
	    'while [ $i -lt 3000 ]; do echo line$i; i=$((i+1)); done',
	    { onStdout: (d) => { if (!tFirst) tFirst = Date.now(); chunks.push(d) } })
	const tEnd = Date.now()
	const joined = chunks.join('')
	ok(joined === r.stdout && r.stdout.split('\n').length === 3002 &&
	    r.stdout.endsWith('line2999\n'), 'long output through onStdout',
	    { chunks: chunks.length, len: r.stdout.length })
	ok(tFirst > 0 && tEnd - tFirst >= 2500, 'onStdout streams before the end',
	    { first: tFirst - t0, end: tEnd - t0 })

	const k = await sbx.commands.run('sleep 300', { background: true })
	ok(await k.kill(), 'kill of a running command', null)
	await fails('the killed command ends, not with 0', () => k.wait(),
	    (e) => e instanceof CommandExitError)

	// A command past its timeoutMs is cut, and killed in the guest.
	await fails('a command past its timeoutMs: cut',
	    () => sbx.commands.run('sleep 120', { timeoutMs: 3000 }),
	    (e) => /deadline|timeout/i.test(`${e.constructor.name} ${e.message}`))
	let procs = []
	for (let i = 0; i < 40; i++) {
		procs = (await sbx.commands.list()).filter((p) =>
		    p.args.join(' ').includes('sleep 120'))
		if (procs.length === 0)
			break
		await new Promise((res) => setTimeout(res, 500))
	}
	ok(procs.length === 0, 'the cut command is gone from list', procs)

	// A terminal: the shell's output, its input, a resize.
	const screen = []
	const t = await sbx.pty.create({ cols: 80, rows: 24, timeoutMs: 120000,
	    onData: (d) => screen.push(Buffer.from(d).toString()) })
	ok((await sbx.commands.list()).some((p) => p.pid === t.pid),
	    'the terminal is in list', t.pid)
	await sbx.pty.resize(t.pid, { cols: 100, rows: 30 })
	await sbx.pty.sendInput(t.pid,
	    new TextEncoder().encode('echo pty$((40+2)); exit 0\n'))
	try { await t.wait() } catch (e) { screen.push(`[${e.message}]`) }
	ok(/pty42/.test(screen.join('')), 'pty: input in, output out', screen.join(''))

	const info = await sbx.files.write('/tmp/e2b/a.txt', 'hello')
	ok(info.path === '/tmp/e2b/a.txt' && info.name === 'a.txt', 'files.write', info)
	ok(await sbx.files.read('/tmp/e2b/a.txt') === 'hello', 'files.read', null)
	const bin = new Uint8Array(70000).map((_, i) => (i * 7) & 255)
	await sbx.files.write('/tmp/e2b/bin', bin.buffer)
	const back = await sbx.files.read('/tmp/e2b/bin', { format: 'bytes' })
	ok(back.length === bin.length && back.every((v, i) => v === bin[i]),
	    'binary round trip', back.length)
	// A stream goes up as application/octet-stream.
	await sbx.files.write('/tmp/e2bs/s', new Blob(['streamed']).stream())
	ok(await sbx.files.read('/tmp/e2bs/s') === 'streamed',
	    'a stream written (octet-stream)', null)
	// gzip: the SDK compresses with CompressionStream, qsup inflates.
	const big = 'gzip me\n'.repeat(20000)
	await sbx.files.write('/tmp/e2bs/g', big, { gzip: true })
	ok(await sbx.files.read('/tmp/e2bs/g') === big, 'a gzip upload', null)
	await sbx.files.write('/tmp/e2bs/g0', '', { gzip: true })
	ok(await sbx.files.read('/tmp/e2bs/g0') === '', 'an empty gzip upload', null)
	// 4 MiB of zeros: some 4 KiB compressed, more than --max-body inflated.
	await fails('a gzip upload past --max-body: refused, said why',
	    () => sbx.files.write('/tmp/e2bs/gz', new Uint8Array(4 << 20),
	    { gzip: true }), (e) => /max-body/.test(e.message))
	const list = await sbx.files.list('/tmp/e2b')
	const a = list.find((e) => e.name === 'a.txt')
	ok(list.length === 2 && a && a.type === 'file' && a.size === 5 &&
	    a.path === '/tmp/e2b/a.txt', 'files.list', list)
	ok(await sbx.files.makeDir('/tmp/e2b/d') === true, 'makeDir', null)
	ok(await sbx.files.makeDir('/tmp/e2b/d') === false, 'makeDir again: false', null)
	ok(await sbx.files.exists('/tmp/e2b/a.txt') === true, 'exists', null)
	ok(await sbx.files.exists('/tmp/e2b/none') === false, 'exists: missing', null)
	const moved = await sbx.files.rename('/tmp/e2b/a.txt', '/tmp/e2b/d/b.txt')
	ok(moved.path === '/tmp/e2b/d/b.txt', 'rename', moved)
	await sbx.files.remove('/tmp/e2b/d')
	ok(await sbx.files.exists('/tmp/e2b/d') === false, 'remove', null)
	await fails('reading a missing file: not found',
	    () => sbx.files.read('/tmp/e2b/none'),
	    (e) => /NotFound/.test(e.constructor.name))

	await sbx.setTimeout(120000)
	const gi = await sbx.getInfo()
	const left = new Date(gi.endAt).getTime() - Date.now()
	ok(gi.sandboxId === sbx.sandboxId && gi.metadata.suite === 'e2b' &&
	    left > 60000 && left <= 125000, 'setTimeout, getInfo', { gi, left })
	const all = await Sandbox.list({ query: { metadata: { suite: 'e2b' } } })
	    .nextItems()
	ok(all.length === 1 && all[0].sandboxId === sbx.sandboxId, 'list', all)
	const odd = await Sandbox.list({ query: { metadata: { 'k &=%': 'v&=%+ é' } } })
	    .nextItems()
	ok(odd.length === 1, 'list: metadata with &, =, %, + and spaces', odd)
	const none = await Sandbox.list({ query: { metadata: { 'k &=%': 'v&=%+' } } })
	    .nextItems()
	ok(none.length === 0, 'list: a value that differs', none)
	ok(await sbx.isRunning(), 'isRunning', null)

	ok(await sbx.kill(), 'kill', null)
	ok(await Sandbox.kill(sbx.sandboxId) === false, 'kill again: false', null)
	await fails('getInfo of a killed sandbox: not found',
	    () => Sandbox.getInfo(sbx.sandboxId),
	    (e) => /NotFound/.test(e.constructor.name))
	await fails('an unknown template: refused, named',
	    () => Sandbox.create('no-such-tpl', slow),
	    (e) => /no-such-tpl/.test(e.message))
}

// Pause and resume: paused, its files kept, back through connect.
async function pause() {
	const sbx = await Sandbox.create('base', { timeoutMs: 300000, ...slow })
	await sbx.files.write('/tmp/kept', 'kept')
	ok(await sbx.pause(slow) === true, 'pause', null)
	ok((await sbx.getInfo()).state === 'paused', 'getInfo: paused', null)
	ok(await Sandbox.pause(sbx.sandboxId, slow) === false,
	    'pause again: false', null)
	const again = await Sandbox.connect(sbx.sandboxId, slow)
	ok((await again.getInfo()).state === 'running', 'connect resumes', null)
	const r = await again.commands.run('cat /tmp/kept')
	ok(r.stdout === 'kept', 'its files after the resume', r)
	ok(await again.kill(), 'kill', null)
}

// Over https, the CA trusted through NODE_EXTRA_CA_CERTS.
async function tls() {
	const all = await Sandbox.list().nextItems()
	ok(Array.isArray(all) && all.length === 0, 'list over TLS', all)
	const sbx = await Sandbox.create('base', slow)
	const r = await sbx.commands.run('echo tls')
	ok(r.stdout === 'tls\n', 'a command over TLS', r)
	ok(await sbx.kill(), 'kill', null)
}

// The template "debian": a profile on the Debian image, so the SDK's
// /bin/bash -l -c is Debian's bash rather than busybox's sh.
async function debian() {
	const sbx = await Sandbox.create('debian', { timeoutMs: 300000, ...slow })
	let r = await sbx.commands.run('echo "$BASH_VERSION"; . /etc/os-release; echo $ID')
	ok(/^5\.[0-9.()a-z-]+\ndebian\n$/.test(r.stdout), 'bash in Debian', r)
	r = await sbx.commands.run('shopt -q login_shell && echo login')
	ok(r.stdout === 'login\n', "the SDK's -l: a login shell", r)
	await fails('a failing command', () => sbx.commands.run('exit 7'),
	    (e) => e instanceof CommandExitError && e.exitCode === 7)
	await sbx.files.write('/root/deb.txt', 'in debian\n')
	ok(await sbx.files.read('/root/deb.txt') === 'in debian\n',
	    'write and read a file', null)
	const l = await sbx.files.list('/root')
	ok(l.some((e) => e.name === 'deb.txt' && e.size === 10),
	    'list', l.map((e) => [e.name, e.size]))
	ok(await sbx.files.exists('/usr/bin/bash'), 'exists', null)
	ok(await sbx.kill(), 'kill', null)
}

// commands.connect: a second client re-attaches to a background
// command, sees its later output and its exit code.
async function reattach() {
	const sbx = await Sandbox.create('base', { timeoutMs: 300000, ...slow })
	const early = []
	const h = await sbx.commands.run(
	    'echo early; read x; echo "later $x"; echo err >&2; exit 3',
	    { background: true, stdin: true, timeoutMs: 120000,
	      onStdout: (d) => early.push(d) })
	// Connect gives what comes after it: wait for "early" to be out.
	for (let i = 0; i < 600 && !early.join('').includes('early'); i++)
		await new Promise((r) => setTimeout(r, 100))
	const other = await Sandbox.connect(sbx.sandboxId, slow)
	const seen = []
	const again = await other.commands.connect(h.pid,
	    { onStdout: (d) => seen.push(d) })
	ok(again.pid === h.pid, 'connect: the same pid', again.pid)
	await sbx.commands.sendStdin(h.pid, 'x\n')
	await fails('connect: the exit code', () => again.wait(),
	    (e) => e instanceof CommandExitError && e.exitCode === 3 &&
	    /later x/.test(e.stdout) && !/early/.test(e.stdout) &&
	    e.stderr === 'err\n')
	ok(seen.join('').includes('later x'), 'connect: onStdout', seen)
	await fails('the first handle: the exit code too', () => h.wait(),
	    (e) => e.exitCode === 3 && e.stdout === 'early\nlater x\n')
	await fails('connect to a finished pid', () =>
	    other.commands.connect(h.pid), (e) => /not found/i.test(e.message))
	// As on E2B, a command outlives the stream that started it: its
	// client disconnects, another finds it, re-attaches, feeds it and
	// sees its end.
	const bg = await sbx.commands.run('echo first; read x; echo "got $x"; exit 5',
	    { background: true, stdin: true, timeoutMs: 120000 })
	await bg.disconnect()
	await new Promise((r) => setTimeout(r, 300))
	let ps = await other.commands.list()
	ok(ps.some((p) => p.pid === bg.pid),
	    'disconnect: the command runs on, listed', ps)
	const back = await other.commands.connect(bg.pid)
	await other.commands.sendStdin(bg.pid, 'y\n')
	await fails('disconnect: connect again, its later output and exit code',
	    () => back.wait(), (e) => e instanceof CommandExitError &&
	    e.exitCode === 5 && e.stdout === 'got y\n')
	ps = await other.commands.list()
	ok(!ps.some((p) => p.pid === bg.pid), 'its end: no longer listed', ps)
	// Two sandboxes: list's pages and filters.
	const sbx2 = await Sandbox.create('base', { timeoutMs: 300000, ...slow })
	const pages = Sandbox.list({ limit: 1 })
	const p1 = await pages.nextItems()
	ok(p1.length === 1 && pages.hasNext, 'list: a page of 1, more to come',
	    { p1, next: pages.nextToken })
	const p2 = await pages.nextItems()
	ok(p2.length === 1 && !pages.hasNext &&
	    p2[0].sandboxId !== p1[0].sandboxId, 'list: the next page, the last',
	    { p2, next: pages.nextToken })
	let l = await Sandbox.list({ query: { template: 'base' } }).nextItems()
	ok(l.length === 2, 'list: template base', l)
	l = await Sandbox.list({ query: { template: 'nope' } }).nextItems()
	ok(l.length === 0, 'list: template nope', l)
	l = await Sandbox.list({ query: { startedAfter: new Date(Date.now() + 60000) } })
	    .nextItems()
	ok(l.length === 0, 'list: startedAfter a minute from now', l)
	l = await Sandbox.list({ query: { startedAfter: new Date(Date.now() - 3600000) } })
	    .nextItems()
	ok(l.length === 2, 'list: startedAfter an hour ago', l)
	// The user option: root is the agent's user, any other is refused.
	const u = await sbx2.commands.run('id -u', { user: 'root' })
	ok(u.stdout === '0\n', "user: 'root'", u)
	await fails("user: 'user' refused, said why",
	    () => sbx2.commands.run('id -u', { user: 'user' }),
	    (e) => /user user: .*root, only/.test(e.message))
	await fails("files as user 'user': refused, said why",
	    () => sbx2.files.write('/tmp/u', 'x', { user: 'user' }),
	    (e) => /user user: .*root, only/.test(e.message))
	ok(await sbx2.kill(), 'kill the second', null)
	ok(await sbx.kill(), 'kill', null)
}

// A client that starts a background command and exits ...
async function bgstart() {
	const sbx = await Sandbox.create('base', { timeoutMs: 300000, ...slow })
	const h = await sbx.commands.run(
	    'i=0; while :; do i=$((i+1)); echo $i >/tmp/n; sleep 0.1; done',
	    { background: true, timeoutMs: 0 })
	for (let i = 0; i < 100 && !await sbx.files.exists('/tmp/n'); i++)
		await new Promise((r) => setTimeout(r, 100))	// it began
	console.log(`BG ${sbx.sandboxId} ${h.pid}`)
}

// ... and another, later, finds it running on: as on E2B.
async function bgcheck() {
	const [id, p] = (process.env.E2B_BG || '').split(' ')
	const pid = Number(p)
	const sbx = await Sandbox.connect(id, slow)
	let ps = await sbx.commands.list()
	ok(ps.some((x) => x.pid === pid),
	    'its client gone: the command is listed', { pid, ps })
	const a = Number(await sbx.files.read('/tmp/n'))
	await new Promise((r) => setTimeout(r, 1500))
	const b = Number(await sbx.files.read('/tmp/n'))
	ok(b > a, 'its client gone: the command runs on', { a, b })
	ok(await sbx.commands.kill(pid), 'kill it by its pid', null)
	for (let i = 0; i < 50 && ps.some((x) => x.pid === pid); i++) {
		await new Promise((r) => setTimeout(r, 100))
		ps = await sbx.commands.list()
	}
	ok(!ps.some((x) => x.pid === pid), 'killed: no longer listed', ps)
	ok(await sbx.kill(), 'kill the sandbox', null)
}

const group = process.argv[2] || 'basic'
if (group === 'basic')
	await basic()
else if (group === 'pause')
	await pause()
else if (group === 'tls')
	await tls()
else if (group === 'connect')
	await reattach()
else if (group === 'debian')
	await debian()
else if (group === 'bgstart')
	await bgstart()
else if (group === 'bgcheck')
	await bgcheck()
else
	ok(false, 'a known group', group)
process.exit(failed)
