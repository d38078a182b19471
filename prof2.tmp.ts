import { createSandboxRuntime } from './platforms/node/sandbox-runtime.js'
const rt = createSandboxRuntime({ prespawn: 1, maxConcurrentRuns: 1 })
await rt.warm()
const bindings = [{ global: 'tools', functions: { inc: async (a: any) => a.i + 1 } }]
for (let k = 0; k < 4; k++) {
  const t1 = performance.now()
  const rr = await rt.run({ program: 'let s = 0; for (let i = 0; i < 5000; i++) s = await tools.inc({ i }); return s', bindings })
  console.log(rr.value, ((performance.now() - t1) / 5000 * 1000).toFixed(1), 'µs/call')
}
await rt.dispose()
