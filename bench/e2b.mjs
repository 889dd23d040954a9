// bench/e2b.sh's timings through E2B's SDK (npm e2b, unchanged), against
// "qsup serve --e2b": create (twice), commands.run('true') ROUNDS times,
// files.write, kill, each timed around the SDK's call. One JSON line out.
import { Sandbox } from 'e2b'

const rounds = Number(process.argv[2] || 11)
const slow = { requestTimeoutMs: 600000 }
const ms = async (fn) => { const t0 = performance.now(); await fn(); return performance.now() - t0 }
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor((v.length - 1) / 2)]

// The process's first call pays for node's HTTP client starting up: timed
// apart, then a second create is the one compared.
let sbx
const first = await ms(async () => { sbx = await Sandbox.create('base', { timeoutMs: 300000, ...slow }) })
await sbx.kill()
const create = await ms(async () => { sbx = await Sandbox.create('base', { timeoutMs: 300000, ...slow }) })
const runs = []
for (let i = 0; i < rounds; i++)
	runs.push(await ms(() => sbx.commands.run('true')))
const write = await ms(() => sbx.files.write('/tmp/b.txt', 'hello'))
const kill = await ms(() => sbx.kill())
console.log(JSON.stringify({ first, create, run: median(runs), write, kill }))
