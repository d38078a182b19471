/**
 * Deep native recursion in a QuickJS VM: QuickJS's own recursion over DATA (`JSON.stringify`
 * of a value nested thousands of levels deep, `JSON.parse` of deep text, `flat`, `join`, a
 * Proxy chain, a `toJSON` chain) spends little of the shadow stack QuickJS's limit counts and
 * much of the host's real stack. Whatever the depth, the program must see a catchable stack
 * overflow and go on, and the runtime must run the next program: never `worker-exit` (the
 * run's VM lost to V8's `Maximum call stack size exceeded`). Shared by the node and workerd
 * projects: no `node:*` import here.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'

/** Each builds its value (or text) `N` levels deep and recurses over it natively. */
export const DEEP_DATA_SHAPES: Readonly<Record<string, string>> = {
  'JSON.stringify of nested arrays': 'let v: unknown = 1; for (let i = 0; i < N; i++) v = [v]; JSON.stringify(v)',
  'JSON.stringify of nested objects': 'let v: unknown = 1; for (let i = 0; i < N; i++) v = { a: v }; JSON.stringify(v)',
  'JSON.stringify through a replacer': 'let v: unknown = 1; for (let i = 0; i < N; i++) v = [v]; JSON.stringify(v, (_k, x) => x)',
  'JSON.stringify of a toJSON chain': 'let v: unknown = 1; for (let i = 0; i < N; i++) { const inner = v; v = { toJSON: () => [inner] } }; JSON.stringify(v)',
  'JSON.parse of nested text': 'JSON.parse("[".repeat(N) + "]".repeat(N))',
  'JSON.parse with a reviver': 'JSON.parse("{\\"a\\":".repeat(N) + "1" + "}".repeat(N), (_k, x) => x)',
  'Array.prototype.flat(Infinity)': 'let v: unknown = 1; for (let i = 0; i < N; i++) v = [v]; (v as unknown[]).flat(Infinity)',
  'String() of nested arrays': 'let v: unknown = 1; for (let i = 0; i < N; i++) v = [v]; String(v)',
  'a Proxy chain': 'let p: Record<string, unknown> = {}; for (let i = 0; i < N; i++) p = new Proxy(p, {}); p.x',
}

/**
 * Source text `N` levels deep handed to the VM's parser at run time, through every way text
 * becomes code: QuickJS's parser spends up to ~25 bytes of real stack to one of shadow stack
 * (nested brackets), so these hit the host's stack first unless the limit is lowered while
 * it parses (src/code-runtime/in-sandbox/compile-guard.ts).
 */
export const DEEP_SOURCE_SHAPES: Readonly<Record<string, string>> = {
  'eval of nested parentheses': 'eval("(".repeat(N) + "1" + ")".repeat(N))',
  'eval of nested array literals': 'eval("[".repeat(N) + "]".repeat(N))',
  'eval of nested object literals': 'eval("({a:".repeat(N) + "1" + "})".repeat(N))',
  'eval of nested template substitutions': 'eval("`${".repeat(N) + "1" + "}`".repeat(N))',
  'eval of nested blocks': 'eval("{".repeat(N) + "}".repeat(N))',
  'indirect eval of nested parentheses': '(0, eval)("(".repeat(N) + "1" + ")".repeat(N))',
  'Function of nested parentheses': 'new Function("return " + "(".repeat(N) + "1" + ")".repeat(N))',
  'Function called without new': 'Function("return " + "[".repeat(N) + "]".repeat(N))',
  'AsyncFunction from a prototype': 'new (Object.getPrototypeOf(async function () {}).constructor)("return " + "(".repeat(N) + "1" + ")".repeat(N))',
  'GeneratorFunction from a prototype': 'new (Object.getPrototypeOf(function* () {}).constructor)("(".repeat(N) + "1" + ")".repeat(N))',
  'AsyncGeneratorFunction from a prototype': 'new (Object.getPrototypeOf(async function* () {}).constructor)("(".repeat(N) + "1" + ")".repeat(N))',
  '.constructor of an arrow': '(() => 0).constructor("return " + "(".repeat(N) + "1" + ")".repeat(N))',
  'Reflect.construct of Function': 'Reflect.construct(Function, ["return " + "(".repeat(N) + "1" + ")".repeat(N)])',
  'a subclass of Function': 'new (class extends Function {})("return " + "(".repeat(N) + "1" + ")".repeat(N))',
  'eval of a unary chain': 'eval("!".repeat(N) + "1")',
  'eval of a typeof chain': 'eval("typeof ".repeat(N) + "1")',
  'eval of a conditional chain': 'eval("0 ? 1 : ".repeat(N) + "2")',
  'eval of an assignment chain': 'eval("var a; " + "a = ".repeat(N) + "1")',
  'eval of an arrow chain': 'eval("x => ".repeat(N) + "1")',
  'eval of a new chain': 'eval("function F() { return F }; " + "new ".repeat(N) + "F")',
  'AsyncFunction of an await chain': 'new (Object.getPrototypeOf(async function () {}).constructor)("await ".repeat(N) + "1")',
  'eval of nested functions': 'eval("(function(){".repeat(N) + "})".repeat(N))',
}

/** The program: every shape at depth `n`, each in its own try/catch, then a marker. */
export function deepProgram(n: number): string {
  const bodies = [...Object.values(DEEP_DATA_SHAPES), ...Object.values(DEEP_SOURCE_SHAPES)].map((body) => `  () => { ${body} },`)
  return [
    `const N = ${n}`,
    'const out: string[] = []',
    `for (const shape of [\n${bodies.join('\n')}\n]) {`,
    '  try { shape(); out.push("ok") } catch (e) { out.push(`${(e as Error).name}: ${(e as Error).message}`) }',
    '}',
    'out.push("went on")',
    'return out',
  ].join('\n')
}

/** Each shape's outcome: "ok" (it fit under QuickJS's limit) or QuickJS's own catchable overflow. */
const caughtOrOk = /^(ok|InternalError: stack overflow|SyntaxError: stack overflow)$/

/** The plain recursion a program gets (`f(n){return n?1+f(n-1):0}`), found by halving. */
export const PLAIN_DEPTH_PROGRAM = `
  function f(n: number): number { return n ? 1 + f(n - 1) : 0 }
  let lo = 0, hi = 1 << 20
  while (hi - lo > 1) { const mid = (lo + hi) >> 1; try { f(mid); lo = mid } catch { hi = mid } }
  return lo`

/**
 * The suite on the runtime `make` returns (made once for the suite, disposed after it): every
 * shape at each of `depths` (default 5,000, 20,000 and 100,000 levels), then a next program.
 */
export function describeDeepNativeRecursion(name: string, make: () => CodeRuntime, options: { readonly depths?: readonly number[] } = {}): void {
  describe(`${name}: deep native recursion over data is a catchable error, never a crash`, () => {
    const runtime = make()
    afterAll(() => runtime.dispose())
    const depths = options.depths ?? [5_000, 20_000, 100_000]

    it.each(depths)('at %i levels every shape is caught (or fits) and the run goes on', async (n) => {
      const result = await runtime.run({ program: deepProgram(n), bindings: [] })
      expect(result.error).toBeUndefined()
      const out = result.value as string[]
      const shapes = [...Object.keys(DEEP_DATA_SHAPES), ...Object.keys(DEEP_SOURCE_SHAPES)]
      expect(out).toHaveLength(shapes.length + 1)
      for (const [i, shape] of shapes.entries()) expect(out[i], shape).toMatch(caughtOrOk)
      expect(out.at(-1)).toBe('went on')
      // 100 000 levels cannot fit: QuickJS's own check fired.
      if (n >= 100_000) expect(out.slice(0, -1).every((o) => o !== 'ok')).toBe(true)
    })

    it('the same runtime runs the next program, and plain recursion keeps more than 300 levels', async () => {
      const result = await runtime.run({ program: PLAIN_DEPTH_PROGRAM, bindings: [] })
      expect(result.error).toBeUndefined()
      expect(result.value).toBeGreaterThan(300)
    })
  })
}

