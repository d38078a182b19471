/**
 * The compile guard (src/code-runtime/in-sandbox/compile-guard.ts) in inline QuickJS and in a
 * QuickJS sandbox thread: `eval` and the four function constructors behave as the language's
 * (identities, prototypes, subclassing, calls without `new`), the stack limit comes back
 * after each compile (a throw included), and a compile is bounded by the lower limit
 * (deep-native-recursion-suite.ts has the shapes that crashed the host before it).
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, describe, expect, it } from 'vitest'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { PLAIN_DEPTH_PROGRAM } from './deep-native-recursion-suite.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))

const IDENTITIES = `
  const AF = Object.getPrototypeOf(async function () {}).constructor
  const GF = Object.getPrototypeOf(function* () {}).constructor
  const AGF = Object.getPrototypeOf(async function* () {}).constructor
  const f = new Function('a', 'b', 'return a + b')
  class Sub extends Function {}
  const s = new Sub('return 7')
  return {
    call: Function('return 1')(), construct: f(2, 3), evalValue: eval('1 + 1'), evalNonString: eval(5),
    fnCtor: (function () {}).constructor === Function, protoCtor: Function.prototype.constructor === Function,
    instance: f instanceof Function, arrowCtor: (() => 0).constructor === Function,
    asyncProto: Object.getPrototypeOf(AF) === Function, genProto: Object.getPrototypeOf(GF) === Function, agenProto: Object.getPrototypeOf(AGF) === Function,
    asyncInstance: new AF('return 1') instanceof AF && AF.prototype === Object.getPrototypeOf(async () => 0),
    genWorks: [...new GF('yield 1; yield 2')()].join(), names: [Function.name, AF.name, GF.name, AGF.name, eval.name].join(),
    lengths: [Function.length, AF.length].join(), sub: s() === 7 && s instanceof Sub && s instanceof Function,
    reflect: Reflect.construct(Function, ['return 3'])(), evalGlobal: (() => { const local = 1; try { return eval('typeof local') } catch (e) { return String(e) } })(),
    syntax: (() => { try { new Function('(') ; return 'no' } catch (e) { return (e as Error).name } })(),
  }`

/** The plain recursion depth, before and after compiles that threw, returned and nested. */
const LIMIT_RESTORED = `
  ${PLAIN_DEPTH_PROGRAM.replace('return lo', 'const before = lo')}
  try { eval('('.repeat(100000)) } catch {}
  try { new Function('['.repeat(100000)) } catch {}
  try { eval('throw 1') } catch {}
  eval('new Function("eval(\\'1\\')")()')
  let after = 0
  { let lo = 0, hi = 1 << 20
    while (hi - lo > 1) { const mid = (lo + hi) >> 1; try { f(mid); lo = mid } catch { hi = mid } }
    after = lo }
  return [before, after]`

function describeGuard(name: string, make: () => CodeRuntime): void {
  describe(`${name}: eval and the Function constructors through the compile guard`, () => {
    const runtime = make()
    afterAll(() => runtime.dispose())

    it('behave as the language says', async () => {
      const result = await runtime.run({ program: IDENTITIES, bindings: [] })
      expect(result.error).toBeUndefined()
      expect(result.value).toEqual({
        call: 1, construct: 5, evalValue: 2, evalNonString: 5,
        fnCtor: true, protoCtor: true, instance: true, arrowCtor: true,
        asyncProto: true, genProto: true, agenProto: true, asyncInstance: true,
        genWorks: '1,2', names: 'Function,AsyncFunction,GeneratorFunction,AsyncGeneratorFunction,eval',
        lengths: '1,1', sub: true, reflect: 3,
        // Every eval is indirect: it sees the global scope, not its caller's.
        evalGlobal: 'undefined', syntax: 'SyntaxError',
      })
    })

    it('give the run its stack limit back after every compile', async () => {
      const result = await runtime.run({ program: LIMIT_RESTORED, bindings: [] })
      expect(result.error).toBeUndefined()
      const [before, after] = result.value as [number, number]
      expect(before).toBeGreaterThan(300)
      expect(after).toBe(before)
    })
  })
}

describeGuard('inline QuickJS', () => createQuickJsRuntime({ wasmModule, memoryMb: 64, computeMs: 20_000 }))
describeGuard('QuickJS sandbox thread', () => createSandboxRuntime({ memoryMb: 64, computeMs: 20_000 }))
