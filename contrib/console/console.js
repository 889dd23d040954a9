// qsup serve's web console (docs/serve-api.md, "Web console"): the API
// through fetch() with the bearer token, the event stream read with a
// streamed fetch (EventSource sends no headers), a terminal (xterm.js) over
// /exec/ws, a display (noVNC, loaded when first needed) over /display.
// The token lives in this tab's sessionStorage only.

const TOKEN_KEY = 'qsup-token';
const $ = (id) => document.getElementById(id);

let token = sessionStorage.getItem(TOKEN_KEY);
const sandboxes = new Map();	// name -> the sandbox as last seen
let events = null;		// the event stream's AbortController
let listTimer = 0;
let term = null, termWs = null, fit = null;
let rfb = null;

// For tests and the curious: what the page drives.
window.qsupConsole = {
	get term() { return term; },
	get rfb() { return rfb; },
	termText() {
		if (term === null)
			return '';
		const b = term.buffer.active, out = [];
		for (let i = 0; i < b.length; i++)
			out.push(b.getLine(i).translateToString(true));
		return out.join('\n');
	},
};

class ApiError extends Error {
	constructor(status, msg) {
		super(msg);
		this.status = status;
	}
}

async function api(method, path, body) {
	const init = { method, headers: { Authorization: 'Bearer ' + token } };
	if (body !== undefined) {
		init.headers['Content-Type'] = 'application/json';
		init.body = JSON.stringify(body);
	}
	const res = await fetch(path, init);
	const text = await res.text();
	let json = null;
	try {
		json = text ? JSON.parse(text) : null;
	} catch (e) {
		json = null;
	}
	if (!res.ok) {
		const msg = json && json.error ? json.error : res.status + ' ' + res.statusText;
		if (res.status === 401)
			logout('the token was refused: ' + msg);
		throw new ApiError(res.status, msg);
	}
	return json;
}

function status(msg, isError) {
	const el = $('status');
	el.textContent = msg;
	el.className = isError ? 'error' : '';
}

// --- logging in and out ---

async function login() {
	const t = $('token').value.trim();
	$('login-error').textContent = '';
	if (t === '') {
		$('login-error').textContent = 'Enter the token.';
		return;
	}
	const res = await fetch('/v1/sandboxes', { headers: { Authorization: 'Bearer ' + t } })
	    .catch((e) => ({ ok: false, status: 0, statusText: String(e) }));
	if (!res.ok) {
		$('login-error').textContent = res.status === 401 ?
		    'Wrong token: the server refused it (401).' :
		    'The server answered ' + res.status + ' ' + res.statusText + '.';
		return;
	}
	token = t;
	sessionStorage.setItem(TOKEN_KEY, t);
	$('token').value = '';
	start();
}

function logout(why) {
	token = null;
	sessionStorage.removeItem(TOKEN_KEY);
	if (events !== null)
		events.abort();
	events = null;
	closeTerminal();
	closeDisplay();
	sandboxes.clear();
	$('main').hidden = true;
	$('logout').hidden = true;
	$('live').hidden = true;
	$('login').hidden = false;
	$('login-error').textContent = why || '';
}

function start() {
	$('login').hidden = true;
	$('main').hidden = false;
	$('logout').hidden = false;
	refreshList();
	streamEvents();
}

// --- the sandboxes ---

async function refreshList() {
	try {
		const list = await api('GET', '/v1/sandboxes');
		sandboxes.clear();
		for (const sb of list.sandboxes)
			sandboxes.set(sb.name, sb);
		render();
	} catch (e) {
		if (token !== null)
			status('listing the sandboxes: ' + e.message, true);
	}
}

function refreshSoon() {
	clearTimeout(listTimer);
	listTimer = setTimeout(refreshList, 300);
}

function button(label, fn) {
	const b = document.createElement('button');
	b.type = 'button';
	b.textContent = label;
	b.dataset.action = label.toLowerCase();
	b.addEventListener('click', fn);
	return b;
}

// What each state allows (docs/serve-api.md: pause, resume, snapshots).
function actions(sb) {
	const out = [], n = sb.name, s = sb.state;
	if (s === 'ready')
		out.push(button('Terminal', () => openTerminal(n)));
	if ((s === 'ready' || s === 'paused') && sb.display === 'vnc')
		out.push(button('Display', () => openDisplay(n)));
	if (s === 'ready')
		out.push(button('Pause', () => act('POST', n, '/pause', undefined, 'paused')));
	if (s === 'paused')
		out.push(button('Resume', () => act('POST', n, '/resume', undefined, 'resumed')));
	if (s === 'ready' || s === 'paused')
		out.push(button('Snapshot', () => act('POST', n, '/snapshots',
		    { name: snapName(n) }, 'saved')));
	if (s !== 'deleted')
		out.push(button('Delete', () => act('DELETE', n, '', undefined, 'deleted')));
	return out;
}

function snapName(n) {
	const stamp = new Date().toISOString().replace(/[^0-9]/g, '').slice(0, 14);
	return (n.slice(0, 40) + '-' + stamp).toLowerCase();
}

async function act(method, name, suffix, body, done) {
	status(name + ': ' + (method === 'DELETE' ? 'deleting' : suffix.slice(1)) + '…');
	try {
		const r = await api(method, '/v1/sandboxes/' + encodeURIComponent(name) + suffix, body);
		status(name + ': ' + done + (r && r.size_bytes !== undefined ?
		    ' as snapshot ' + r.name : ''));
		refreshSoon();
	} catch (e) {
		status(name + ': ' + e.message, true);
	}
}

function render() {
	const tbody = $('sandboxes').tBodies[0];
	tbody.replaceChildren();
	const names = [...sandboxes.keys()].sort();
	for (const name of names) {
		const sb = sandboxes.get(name);
		const tr = document.createElement('tr');
		tr.dataset.name = name;
		const cells = [name, sb.state, sb.profile || '',
		    sb.memory_mib ? sb.memory_mib + ' MiB' : ''];
		cells.forEach((text, i) => {
			const td = document.createElement('td');
			td.textContent = text;
			if (i === 1) {
				td.className = 'state state-' + sb.state;
				if (sb.reason)
					td.title = sb.reason;
			}
			tr.appendChild(td);
		});
		const td = document.createElement('td');
		td.append(...actions(sb));
		tr.appendChild(td);
		tbody.appendChild(tr);
	}
	$('empty').hidden = names.length > 0;
}

async function create() {
	const body = {};
	const name = $('new-name').value.trim();
	const profile = $('new-profile').value.trim();
	if (name !== '')
		body.name = name;
	if (profile !== '')
		body.profile = profile;
	body.wait = false;
	status('creating ' + (name || 'a sandbox') + '…');
	try {
		const sb = await api('POST', '/v1/sandboxes', body);
		sandboxes.set(sb.name, sb);
		render();
		status(sb.name + ': ' + sb.state);
		$('new-name').value = '';
	} catch (e) {
		status('create: ' + e.message, true);
	}
}

// --- live events: text/event-stream through a streamed fetch ---

function logEvent(name, data) {
	const li = document.createElement('li');
	li.textContent = new Date().toLocaleTimeString() + ' ' + name + ' ' + data;
	const ol = $('events');
	ol.appendChild(li);
	while (ol.children.length > 200)
		ol.removeChild(ol.firstChild);
	ol.scrollTop = ol.scrollHeight;
}

function onEvent(name, data) {
	logEvent(name, data);
	let ev;
	try {
		ev = JSON.parse(data);
	} catch (e) {
		return;
	}
	if (name === 'sandbox') {
		if (ev.state === 'deleted') {
			sandboxes.delete(ev.name);
			if (term !== null && $('term-name').textContent === ev.name)
				$('term-state').textContent = '(sandbox deleted)';
		} else {
			const known = sandboxes.get(ev.name);
			if (known === undefined)
				refreshSoon();
			sandboxes.set(ev.name, Object.assign(known || {}, ev));
		}
		if ($('status').textContent.startsWith(ev.name + ': '))
			status(ev.name + ': ' + ev.state + (ev.reason ? ' (' + ev.reason + ')' : ''));
		render();
	} else if (name === 'exec') {
		refreshSoon();
	}
}

async function streamEvents() {
	const ctl = new AbortController();
	events = ctl;
	try {
		const res = await fetch('/v1/events', {
			headers: { Authorization: 'Bearer ' + token },
			signal: ctl.signal,
		});
		if (res.status === 401) {
			logout('the token was refused by the event stream');
			return;
		}
		if (!res.ok || res.body === null)
			throw new Error('events: ' + res.status);
		$('live').hidden = false;
		const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
		let buf = '';
		for (;;) {
			const { value, done } = await reader.read();
			if (done)
				break;
			buf += value.replace(/\r\n?/g, '\n');
			let at;
			while ((at = buf.indexOf('\n\n')) !== -1) {
				const block = buf.slice(0, at);
				buf = buf.slice(at + 2);
				let name = 'message';
				const data = [];
				for (const line of block.split('\n')) {
					if (line.startsWith('event:'))
						name = line.slice(6).trim();
					else if (line.startsWith('data:'))
						data.push(line.slice(5).replace(/^ /, ''));
				}
				if (data.length > 0)
					onEvent(name, data.join('\n'));
			}
		}
	} catch (e) {
		if (ctl.signal.aborted)
			return;
	}
	$('live').hidden = true;
	// The stream ended (the server restarted?): again, while logged in.
	if (events === ctl && token !== null)
		setTimeout(() => { if (events === ctl) streamEvents(); }, 2000);
}

// --- the terminal: xterm.js over GET /v1/sandboxes/NAME/exec/ws ---

function wsUrl(path) {
	return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + path;
}

function openTerminal(name) {
	closeTerminal();
	$('term-pane').hidden = false;
	$('term-name').textContent = name;
	$('term-state').textContent = '(connecting)';
	term = new window.Terminal({ cursorBlink: true, convertEol: false, fontSize: 14 });
	// The canvas renderer, loaded before open(): xterm's DOM renderer
	// writes <style> elements, which the page's CSP refuses.
	term.loadAddon(new window.CanvasAddon.CanvasAddon());
	fit = new window.FitAddon.FitAddon();
	term.loadAddon(fit);
	term.open($('term'));
	fit.fit();
	let ws;
	try {
		ws = new WebSocket(wsUrl('/v1/sandboxes/' + encodeURIComponent(name) + '/exec/ws'),
		    ['qsup', 'bearer.' + token]);
	} catch (e) {
		// A token with characters a subprotocol cannot carry.
		$('term-state').textContent = '(' + e.message + ')';
		return;
	}
	ws.binaryType = 'arraybuffer';
	termWs = ws;
	const enc = new TextEncoder();
	ws.onopen = () => {
		ws.send(JSON.stringify({ argv: ['/bin/sh', '-l'], tty: true,
		    rows: term.rows, cols: term.cols }));
	};
	ws.onmessage = (m) => {
		if (typeof m.data === 'string') {
			let msg;
			try {
				msg = JSON.parse(m.data);
			} catch (e) {
				return;
			}
			if (msg.type === 'started')
				$('term-state').textContent = '(exec ' + msg.id + ')';
			else if (msg.type === 'exit')
				$('term-state').textContent = '(exited ' + msg.code + ')';
			else if (msg.type === 'error' || msg.error)
				$('term-state').textContent = '(' + (msg.error || msg.message) + ')';
			return;
		}
		const b = new Uint8Array(m.data);
		if (b.length > 1 && term !== null && termWs === ws)
			term.write(b.subarray(1));
	};
	ws.onclose = (e) => {
		if (termWs === ws && !/exited/.test($('term-state').textContent))
			$('term-state').textContent = '(closed' + (e.code !== 1000 && e.code !== 1005 ?
			    ' ' + e.code : '') + ')';
	};
	term.onData((d) => {
		if (ws.readyState !== WebSocket.OPEN)
			return;
		const data = enc.encode(d), out = new Uint8Array(data.length + 1);
		out[0] = 0;
		out.set(data, 1);
		ws.send(out);
	});
	term.onResize(({ rows, cols }) => {
		if (ws.readyState === WebSocket.OPEN)
			ws.send(JSON.stringify({ type: 'resize', rows, cols }));
	});
	term.focus();
}

function closeTerminal() {
	if (termWs !== null)
		termWs.close();
	termWs = null;
	if (term !== null)
		term.dispose();
	term = null;
	fit = null;
	$('term-pane').hidden = true;
}

// --- the display: noVNC over GET /v1/sandboxes/NAME/display ---

async function openDisplay(name) {
	closeDisplay();
	$('display-pane').hidden = false;
	$('display-name').textContent = name;
	$('display-state').textContent = '(connecting)';
	let RFB;
	try {
		RFB = (await import('./vendor/novnc/core/rfb.js')).default;
	} catch (e) {
		$('display-state').textContent = '(noVNC did not load: ' + e.message + ')';
		return;
	}
	let r;
	try {
		r = new RFB($('display'), wsUrl('/v1/sandboxes/' + encodeURIComponent(name) + '/display'),
		    { wsProtocols: ['binary', 'bearer.' + token] });
	} catch (e) {
		$('display-state').textContent = '(' + e.message + ')';
		return;
	}
	r.scaleViewport = true;
	r.addEventListener('connect', () => { $('display-state').textContent = '(connected)'; });
	r.addEventListener('disconnect', (e) => {
		$('display-state').textContent = e.detail.clean ? '(disconnected)' :
		    '(no display, or the connection failed)';
	});
	r.addEventListener('securityfailure', (e) => {
		$('display-state').textContent = '(refused: ' + (e.detail.reason || e.detail.status) + ')';
	});
	rfb = r;
}

function closeDisplay() {
	if (rfb !== null)
		rfb.disconnect();
	rfb = null;
	$('display').replaceChildren();
	$('display-pane').hidden = true;
}

// --- wiring ---

$('login-button').addEventListener('click', login);
$('token').addEventListener('keydown', (e) => { if (e.key === 'Enter') login(); });
$('logout').addEventListener('click', () => logout(''));
$('create-button').addEventListener('click', create);
$('new-name').addEventListener('keydown', (e) => { if (e.key === 'Enter') create(); });
$('term-close').addEventListener('click', closeTerminal);
$('display-close').addEventListener('click', closeDisplay);
window.addEventListener('resize', () => { if (fit !== null) fit.fit(); });

fetch('/v1/healthz').then((r) => r.json())
    .then((h) => { $('version').textContent = h.version || ''; })
    .catch(() => {});

if (token !== null)
	start();
