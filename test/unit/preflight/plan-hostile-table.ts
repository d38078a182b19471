/**
 * Programs that hide a `write_file({ n: 666 })` call from a plain reading of their plan,
 * each next to a planned, harmless `write_file({ n: 1 })` on line 1 (the card an attacker
 * wants a person to allow). `expect`: `'dynamic'`, or the line the scan must list the
 * hidden call at. `runs`: whether QuickJS makes the hidden call (some spellings only
 * exist in other runtimes; the scan refuses them all the same).
 */

/** One hostile spelling. */
export interface HostileSpelling {
  readonly label: string
  readonly code: string
  readonly expect: 'dynamic' | { readonly line: number }
  readonly runs: boolean
  /** The stripper refuses it outright (a syntax error to sucrase): dynamic, and it never runs. */
  readonly refused?: true
  /** QuickJS refuses to compile it (nothing runs, nothing but the plan asks). */
  readonly compiles?: false
}

const PLANNED = 'await tools.write_file({ n: 1 })\n'
const HIDDEN = 'write_file({ n: 666 })'

function spell(label: string, body: string, expected: HostileSpelling['expect'] = 'dynamic', runs = true): HostileSpelling {
  return { label, code: PLANNED + body, expect: expected, runs }
}

export const HOSTILE_SPELLINGS: readonly HostileSpelling[] = [
  // The four of the issue.
  spell('an escaped member name', `await tools.\\u0077rite_file({ n: 666 })`),
  spell('an escaped namespace name', `await \\u0074ools.${HIDDEN}`),
  spell('tools destructured from this', `const { tools: t } = this\nawait t.${HIDDEN}`),
  spell("an AsyncFunction from a function's constructor", `await (async () => {}).constructor("return tools.${HIDDEN}")()`),
  // The global object, in any form.
  spell('globalThis.tools', `await globalThis.tools.${HIDDEN}`),
  spell('self.tools', `await self.tools.${HIDDEN}`, 'dynamic', false),
  spell('globalThis aliased, then a computed key', `const g = globalThis\nawait g['to' + 'ols'].${HIDDEN}`),
  spell('tools destructured from globalThis', `const { tools: t } = globalThis\nawait t.${HIDDEN}`),
  spell('this from a sloppy function', `const g = (function () { return this })()\nawait g.tools.${HIDDEN}`),
  spell('this through a getter on Object.prototype', `Object.defineProperty(Object.prototype, 'gg', { get() { return this }, configurable: true })\nawait gg.tools.${HIDDEN}`),
  spell('a this-returning getter on Object.prototype, then tools as a key', `Object.defineProperty(Object.prototype, 'gg', { get: Object.prototype.valueOf, configurable: true })\nconst { tools: t } = gg\nawait t.${HIDDEN}`),
  spell('tools read by a quoted key', `const holder = { t: 1 }\nconst { 'tools': t = tools } = holder\nawait t.${HIDDEN}`),
  spell('tools read by a literal index off another object', `const holder = { t: 1 }\nconst t = holder['tools'] || null\nawait tools.${HIDDEN}`),
  { ...spell('an escaped this', `await th\\u0069s.tools.${HIDDEN}`, 'dynamic', false), compiles: false },
  // Code from strings.
  spell('eval', `await eval("tools.${HIDDEN}")`),
  spell('indirect eval', `await (0, eval)("tools.${HIDDEN}")`),
  spell('the Function constructor', `await Function("return tools.${HIDDEN}")()`),
  spell('constructor read by a computed key', `const k = 'constr' + 'uctor'\nawait (async () => {})[k]("return tools.${HIDDEN}")()`),
  spell('constructor read by a computed key after a non-null assertion', `const f: any = async () => {}\nconst k = 'constr' + 'uctor'\nawait f![k]("return tools.${HIDDEN}")()`),
  spell('constructor read by a literal key', `await (async () => {})['constructor']("return tools.${HIDDEN}")()`),
  spell('constructor destructured', `const { constructor: F } = async () => {}\nawait F("return tools.${HIDDEN}")()`),
  spell('constructor destructured by an escaped key', `const { 'constr\\u0075ctor': F } = async () => {}\nawait F("return tools.${HIDDEN}")()`),
  spell('constructor destructured by a computed key', `const k = 'constructor'\nconst { [k]: F } = async () => {}\nawait F("return tools.${HIDDEN}")()`),
  spell('constructor through property descriptors', `const d = Object.values(Object.getOwnPropertyDescriptors(Object.getPrototypeOf(async () => {})))\nconst F = d.find((x) => typeof x.value === 'function').value\nawait F("return tools.${HIDDEN}")()`),
  spell('constructor through Reflect.get', `const F = Reflect.get(async () => {}, 'constr' + 'uctor')\nawait F("return tools.${HIDDEN}")()`),
  spell('dynamic import', `await import('data:text/javascript,export default 1')\nawait tools.${HIDDEN}`, 'dynamic', false),
  { ...spell('with over tools', `with (tools) { await ${HIDDEN} }`, 'dynamic', false), refused: true },
  spell('arguments', `const f = function () { return arguments }\nawait f(tools)[0].${HIDDEN}`),
  // The namespace aliased or passed where the scan cannot follow it.
  spell('an alias indexed by a computed key', `const t = tools\nconst k = 'write' + '_file'\nawait t[k]({ n: 666 })`),
  spell('an alias stored on an object', `const o = {}\no.y = tools\nawait o.y.${HIDDEN}`),
  spell('Object.values(tools)', `const all = Object.values(tools)\nawait all[all.length - 1]({ n: 666 })`),
  spell('a template key with a substitution', `const w = 'write'\nawait tools[\`\${w}_file\`]({ n: 666 })`),
  spell('an escaped template key', `await tools[\`write\\u005ffile\`]({ n: 666 })`),
  spell('string concatenation', `await tools['write' + '_file']({ n: 666 })`),
  spell('a spread of tools', `const all = { ...tools }\nawait all.${HIDDEN}`),
  spell('tools passed into a function', `const call = (ns) => ns.${HIDDEN}\nawait call(tools)`),
  spell('a Proxy over tools', `const p = new Proxy(tools, {})\nawait p.${HIDDEN}`),
  spell('a getter returning tools', `const o = { get t() { return tools } }\nawait o.t.${HIDDEN}`),
  spell('tools in an array', `await [tools][0].${HIDDEN}`),
  spell('tools in parentheses', `await (tools).${HIDDEN}`),
  spell('a non-ASCII name beside tools', `const tооls = tools\nawait tооls.${HIDDEN}`),
  spell('prototype surgery', `const o = Object.setPrototypeOf({}, tools)\nawait o.${HIDDEN}`),
  spell('__proto__', `const o = { __proto__: tools }\nawait o.${HIDDEN}`),
  // Listed: the call is named where it is written.
  spell('Reflect.apply on a member', `await Reflect.apply(tools.write_file, null, [{ n: 666 }])`),
  spell('a plain template key', `await tools[\`write_file\`]({ n: 666 })`, { line: 2 }),
  spell('an alias used before its var (hoisting)', `async function f() { return t.${HIDDEN} }\nvar t = tools\nawait f()`, { line: 2 }),
  spell('an alias chain declared after its use', `async function f() { return b.${HIDDEN} }\nvar b = a\nvar a = tools\nawait f()`, { line: 2 }),
  spell('a member kept in an array', `const fns = [tools.write_file]\nawait fns[0]({ n: 666 })`, { line: 2 }),
  spell('a member bound', `const w = tools.write_file.bind(null)\nawait w({ n: 666 })`, { line: 2 }),
  spell('a destructured tool called before its declaration', `async function f() { return w({ n: 666 }) }\nconst { write_file: w } = tools\nawait f()`, { line: 2 }),
]

/** Programs the scan must keep static: what models write (with the calls in order). */
export const STILL_STATIC: readonly { readonly label: string; readonly code: string; readonly calls: readonly string[] }[] = [
  { label: 'a loop over a list', code: 'const files = ["a", "b"]\nconst out = []\nfor (const f of files) out.push(await tools.read_file({ path: f }))\nreturn out', calls: ['read_file'] },
  { label: 'a computed write (`counts[k] = v`)', code: 'const counts = {}\nfor (const k of ["a"]) counts[k] = 1\nawait tools.write_file({ path: "x", content: JSON.stringify(counts) })', calls: ['write_file'] },
  { label: 'literal indexes and keys', code: 'const rows = await tools.list({})\nconst first = rows[0]\nconst name = first["name"]\nreturn { name }', calls: ['list'] },
  { label: 'arrays after await and of', code: 'const [a, b] = await Promise.all([tools.a({}), tools.b({})])\nfor (const x of [a, b]) console.log(x)', calls: ['a', 'b'] },
  { label: 'an object with a computed-free shape', code: 'const summary = { files: 2, ok: true }\nreturn summary', calls: [] },
  { label: 'a class defining its constructor', code: 'class Box { constructor(v) { } }\nreturn await tools.read_file({ path: "a" })', calls: ['read_file'] },
  { label: 'an alias ended by a lone CR or U+2028 (ASI at any line terminator)', code: 'const t = tools\rawait t.read_file({ path: "a" })\u2028const u = tools\u2028await u.write_file({ path: "b" })', calls: ['read_file', 'write_file'] },
  { label: 'type annotations', code: 'const r: Record<string, number> = {}\nconst f: Function | undefined = undefined\nreturn await tools.read_file({ path: "a" })', calls: ['read_file'] },
]

/** Python spellings that must read as dynamic. */
export const HOSTILE_PYTHON: readonly (readonly [string, string])[] = [
  ['getattr', "f = getattr(tools, 'write_' + 'file')"],
  ['getattr through builtins', "import builtins\nf = builtins.getattr(tools, 'write_file')"],
  ['__dict__', "f = tools.__dict__['write_file']"],
  ['globals()', "g = globals()\nt = g['to' + 'ols']"],
  ['vars()', "t = vars()['tools']"],
  ['exec', "exec('tools.write_file(n=666)')"],
  ['eval', "eval('tools.write_file(n=666)')"],
  ['__import__', "m = __import__('builtins')"],
  ['an alias with a trailing comment', 't = tools  # the namespace\nt.write_file(n=666)'],
  ['tools indexed', "tools['write_file'](n=666)"],
  ['tools passed on', 'f(tools)'],
  ['tools read off another object', 'x.tools.write_file(n=666)'],
  ['a name that folds to tools', '\uff54ools.write_file(n=666)'],
  ['a dunder attribute', 'c = tools.read_file.__class__'],
]
