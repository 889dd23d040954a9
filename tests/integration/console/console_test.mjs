// console_test.sh's browser half: Debian's chromium, headless, driven by
// playwright-core, through qsup serve's web console.
//   node console_test.mjs GROUP
// QSUP_URL (http://127.0.0.1:PORT), QSUP_TOKEN_FILE, QSUP_SHOTS (where
// screenshots go), QSUP_SANDBOX (a sandbox's name, for terminal and
// display). One line "    ok WHAT" per check passed, "    FAIL WHAT" per
// one failed; exit status: the failures.
import { readFileSync, mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

const group = process.argv[2];
const base = process.env.QSUP_URL;
const origin = new URL(base).origin;
const token = readFileSync(process.env.QSUP_TOKEN_FILE, 'utf8').trim();
const shots = process.env.QSUP_SHOTS;
const sbName = process.env.QSUP_SANDBOX || 'web1';
// TCG boots are slow and the machine is shared: generous.
const BOOT_MS = 600000;
let failed = 0;

function ok(what) {
	console.log('    ok ' + what);
}
function bad(what) {
	console.log('    FAIL ' + what);
	failed++;
}
function check(cond, what, why) {
	if (cond)
		ok(what);
	else
		bad(what + (why ? ': ' + why : ''));
}

mkdirSync(shots, { recursive: true });
const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
	args: ['--no-sandbox'],
});
const page = await browser.newPage({ viewport: { width: 1200, height: 1100 } });
const foreign = [], violations = [], pageErrors = [];
page.on('request', (r) => {
	const u = r.url();
	if (!u.startsWith('data:') && !u.startsWith('blob:') && new URL(u).origin !== origin)
		foreign.push(u);
});
page.on('websocket', (ws) => {
	const u = new URL(ws.url());
	if (u.host !== new URL(origin).host)
		foreign.push(ws.url());
});
page.on('console', (m) => {
	if (/Content Security Policy/i.test(m.text()))
		violations.push(m.text());
});
page.on('pageerror', (e) => pageErrors.push(String(e)));
// Injected by the DevTools protocol, so the page's CSP does not apply.
await page.addInitScript(() => {
	window.__csp = [];
	document.addEventListener('securitypolicyviolation', (e) =>
	    window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
});

async function shot(name) {
	await page.screenshot({ path: shots + '/' + group + '-' + name + '.png', fullPage: true });
}

async function login(t) {
	await page.goto(base + '/');
	await page.fill('#token', t);
	await page.click('#login-button');
}

function row(name) {
	return page.locator('#sandboxes tr[data-name="' + name + '"]');
}

async function rowState(name, state, ms) {
	await row(name).locator('td.state', { hasText: new RegExp('^' + state + '$') })
	    .waitFor({ timeout: ms });
}

async function clean() {
	const csp = await page.evaluate(() => window.__csp).catch(() => ['(page gone)']);
	check(csp.length === 0 && violations.length === 0, 'no CSP violation',
	    JSON.stringify(csp.concat(violations)));
	check(foreign.length === 0, 'no request to another origin', foreign.join(' '));
	check(pageErrors.length === 0, 'no error thrown in the page', pageErrors.join(' | '));
}

async function walk() {
	await page.goto(base + '/');
	check(await page.title() === 'qsup console', 'the page loads');
	check(await page.isVisible('#login'), 'the login is shown first');
	await shot('login');
	await login(token);
	await page.waitForSelector('#main', { state: 'visible', timeout: 20000 });
	ok('logged in');
	check(await page.evaluate(() => sessionStorage.getItem('qsup-token')) === token &&
	    await page.evaluate(() => localStorage.length) === 0,
	    'the token is in sessionStorage only');
	await page.locator('#live').waitFor({ state: 'visible', timeout: 20000 });
	ok('the event stream is live');
	await page.fill('#new-name', sbName);
	await page.click('#create-button');
	await row(sbName).waitFor({ timeout: 30000 });
	ok('the new sandbox is listed');
	await shot('booting');
	await rowState(sbName, 'ready', BOOT_MS);
	// The console polls nothing: ready can only have come from an event.
	const evs = await page.textContent('#events');
	check(evs.includes('"name":"' + sbName + '","state":"ready"'),
	    'ready came from the live events', evs.slice(-400));
	const buttons = await row(sbName).locator('button').allTextContents();
	check(['Terminal', 'Pause', 'Snapshot', 'Delete'].every((b) => buttons.includes(b)) &&
	    !buttons.includes('Resume'), 'a ready sandbox offers its actions', buttons.join(','));
	check(!buttons.includes('Display'), 'a sandbox without a screen offers no Display',
	    buttons.join(','));
	await shot('ready');
	// xterm.js (its canvas renderer) loads under the page's CSP, whether
	// or not this server has the WebSockets yet (noVNC's modules: display).
	await row(sbName).locator('button[data-action="terminal"]').click();
	await page.locator('#term .xterm canvas').first().waitFor({ timeout: 20000 })
	    .then(() => ok('the terminal draws on a canvas'), () => bad('the terminal draws on a canvas'));
	check(await page.evaluate(() => window.qsupConsole.term !== null &&
	    window.qsupConsole.term.cols > 20), 'the terminal is fitted to its pane');
	await page.click('#term-close');
	await row(sbName).locator('button[data-action="pause"]').click();
	await rowState(sbName, 'paused', 60000);
	const paused = await row(sbName).locator('button').allTextContents();
	check(paused.includes('Resume') && !paused.includes('Pause') && !paused.includes('Terminal'),
	    'paused: Resume offered, not Pause nor Terminal', paused.join(','));
	await row(sbName).locator('button[data-action="resume"]').click();
	await rowState(sbName, 'ready', 60000);
	ok('paused and resumed from the page');
	await row(sbName).locator('button[data-action="delete"]').click();
	await row(sbName).waitFor({ state: 'detached', timeout: 120000 });
	ok('deleted: its row is gone');
	await shot('deleted');
	await clean();
}

async function wrongToken() {
	await login('not-the-token');
	const err = page.locator('#login-error');
	await err.filter({ hasText: 'Wrong token' }).waitFor({ timeout: 20000 });
	ok('a wrong token shows an error');
	check(!(await page.isVisible('#main')), 'nothing is shown past the login');
	check(await page.evaluate(() => sessionStorage.getItem('qsup-token')) === null,
	    'a wrong token is not kept');
	await shot('wrong-token');
	await clean();
}

// The sandbox QSUP_SANDBOX, made ready by the script: `echo hi` in its
// terminal, read back from xterm.js's buffer.
async function terminal() {
	await login(token);
	await rowState(sbName, 'ready', 60000);
	await row(sbName).locator('button[data-action="terminal"]').click();
	await page.locator('#term-state', { hasText: 'exec' }).waitFor({ timeout: 60000 });
	ok('the terminal started an exec');
	await page.click('#term');
	await page.keyboard.type('echo h""i\r', { delay: 20 });
	await page.waitForFunction(() => /^hi\s*$/m.test(window.qsupConsole.termText()),
	    null, { timeout: 60000 }).then(() => ok('echo hi read back from the terminal'),
	    async () => bad('echo hi read back from the terminal: ' +
	    JSON.stringify(await page.evaluate(() => window.qsupConsole.termText().trim()))));
	const before = await page.evaluate(() => window.qsupConsole.term.cols);
	await page.setViewportSize({ width: 800, height: 1100 });
	await page.waitForFunction((b) => window.qsupConsole.term.cols < b, before,
	    { timeout: 10000 }).then(() => ok('the terminal fits a narrower window'),
	    () => bad('the terminal fits a narrower window'));
	await page.keyboard.type('stty size\r', { delay: 20 });
	const cols = await page.evaluate(() => window.qsupConsole.term.cols);
	const rows = await page.evaluate(() => window.qsupConsole.term.rows);
	await page.waitForFunction((s) => window.qsupConsole.termText().includes(s),
	    rows + ' ' + cols, { timeout: 30000 }).then(() => ok('the guest sees the new size'),
	    async () => bad('the guest sees the new size ' + rows + ' ' + cols));
	await shot('terminal');
	await page.keyboard.type('exit\r');
	await page.locator('#term-state', { hasText: 'exited 0' }).waitFor({ timeout: 30000 })
	    .then(() => ok('exit ends the exec'), () => bad('exit ends the exec'));
	await clean();
}

// The sandbox QSUP_SANDBOX has a display: the canvas noVNC draws changes.
async function display() {
	await login(token);
	await rowState(sbName, 'ready', 60000);
	await row(sbName).locator('button[data-action="display"]').click();
	await page.waitForFunction(() => window.qsupConsole.rfb !== null ||
	    /did not load/.test(document.getElementById('display-state').textContent),
	    null, { timeout: 20000 }).catch(() => {});
	check(await page.evaluate(() => window.qsupConsole.rfb !== null),
	    "noVNC's modules load without a bundler", await page.textContent('#display-state'));
	await page.locator('#display canvas').waitFor({ timeout: 30000 });
	// A hash of the canvas's pixels, and how many colours it shows.
	const sample = () => page.evaluate(() => {
		const c = document.querySelector('#display canvas');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		const colours = new Set();
		let h = 0;
		for (let i = 0; i < d.length; i += 16) {
			h = (h * 31 + d[i] + d[i + 1] * 7 + d[i + 2] * 13) >>> 0;
			if (colours.size < 64)
				colours.add(d[i] << 16 | d[i + 1] << 8 | d[i + 2]);
		}
		return { hash: c.width + 'x' + c.height + ':' + h, colours: colours.size };
	});
	await page.locator('#display-state', { hasText: '(connected)' }).waitFor({ timeout: 60000 })
	    .then(() => ok('noVNC connected'), async () =>
	    bad('noVNC connected: ' + await page.textContent('#display-state')));
	// At connect the canvas is blank, one colour: a picture (two colours
	// or more) is what a framebuffer update drew. On a quick host the first
	// update has come before the first look; the screen may not change
	// after it, so only a blank first look waits for the hash to move.
	const first = await sample();
	const drawn = (s) => s.colours >= 2 && (first.colours >= 2 || s.hash !== first.hash);
	let now = first;
	for (let i = 0; i < 60 && !drawn(now); i++) {
		await page.waitForTimeout(1000);
		now = await sample();
	}
	check(drawn(now), 'the display canvas updated to a picture',
	    JSON.stringify(first) + ' then ' + JSON.stringify(now));
	await shot('display');
	await clean();
}

const groups = { walk, 'wrong-token': wrongToken, terminal, display };
try {
	if (groups[group] === undefined)
		throw new Error('no group ' + group);
	await groups[group]();
} catch (e) {
	bad(String(e).split('\n')[0]);
	await shot('failed').catch(() => {});
} finally {
	await browser.close();
}
process.exit(failed);
