#!/usr/bin/env node
// Structure check (`npm run check:structure`, run by `npm test` before the build). Fails
// when, in `src/` or `platforms/` (generated `_*-source.ts` files excluded):
//   - a function is over MAX_LINES lines, nested closures counted in their outermost
//     function (a long function does not get shorter by hiding its body in arrows), or
//   - files import each other in a cycle (type-only imports and re-exports included:
//     a type cycle still ties two files' changes together), or
//   - the code runtimes' run lifecycle is written outside its one file: only
//     LIFECYCLE_FILE imports host-session's `prepareRun` (the sequence disposed? → prepare → abort beats a
//     syntax error → strip → start → track starts there), and each trusted worker runtime
//     (TRUSTED_RUNTIMES) stays a driver of at most MAX_TRUSTED_LINES lines, or
//   - a realm boundary is crossed (REALM_RULES): code that runs inside a sandbox VM or a
//     trusted thread (`src/code-runtime/in-sandbox/`) imports only its own folder and the
//     modules shared by both realms, so no host code is bundled into the sandbox script;
//     host code does not import it (only the thread entries and the generator do); the
//     QuickJS engine (`engine/`) imports no platform, or
//   - comments exceed MAX_COMMENT_SHARE of the hand-written files' characters (comment tokens
//     of the TypeScript scanner; generated files excluded), or an `@module` header has more
//     than MAX_HEADER_LINES lines between its delimiters (issue 38: comments at the anchors' level).
// It prints the longest functions, every offender and every cycle, then a verdict per
// folder (`src/registry`, `platforms/node`…), so one team's folder can be judged while
// another's is being rewritten. `--only <folder>[,<folder>…]` (as printed, or a root:
// `src`) limits the verdict and the exit code to those folders; everything is still
// read, so a cycle that crosses into a listed folder is reported.
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const MAX_LINES = 200
const ROOTS = ['src', 'engine', 'platforms']
const SHOW_LONGEST = 10
const LIFECYCLE_FILE = 'src/code-runtime/run-lifecycle.ts'
const PREPARE_DEFINED_IN = 'src/code-runtime/host-session.ts'
const TRUSTED_RUNTIMES = ['platforms/node/worker-runtime.ts', 'platforms/browser/browser-worker-runtime.ts']
const MAX_TRUSTED_LINES = 150
/** 1.3× hono's src/ (14.7 % by the same measure), issue 38. */
const MAX_COMMENT_SHARE = 0.19
const MAX_HEADER_LINES = 4
/** The folder of code that runs inside a sandbox VM or a trusted thread (bundled by scripts/gen-bootstrap.mjs). */
const IN_SANDBOX = 'src/code-runtime/in-sandbox/'
/** Modules both realms import: pure functions and types, no host authority. */
const SHARED_WITH_SANDBOX = ['src/code-runtime/wire.ts', 'src/code-runtime/render.ts', 'src/code-runtime/closest-names.ts', 'src/code-runtime/contract.ts', 'src/code-runtime/sandbox-protocol.ts', 'src/errors.ts', 'src/json/', 'src/util/utf8.ts']
/** Files outside IN_SANDBOX that may import it: the thread entries that boot the bootstrap. */
const SANDBOX_ENTRIES = ['platforms/node/worker-entry.ts', 'platforms/browser/worker-entry.ts']
/** Each realm rule: the importing file's prefix, and which targets it may not import (with why). */
// The runtime's store key families: only their owners name them (no module reads another's keys).
const KEY_FAMILIES = [
  { prefixes: ['runs/', 'calls/', 'owners/', 'run-records/', 'run-events/', 'run-parks/'], owners: ['src/durable/'] },
  { prefixes: ['approvals/'], owners: ['src/durable/', 'src/approvals/'] },
]
// Store implementations (drivers and the edge's index store) may see every key.
const isStoreDriver = (file) => /store\.ts$/.test(file) || file === 'platforms/edge/run-index.ts'
function storeKeysNamed(source, file) {
  const found = []
  const visit = (node) => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateHead(node)) {
      const family = KEY_FAMILIES.find((f) => f.prefixes.some((prefix) => node.text.startsWith(prefix)))
      if (family !== undefined && !family.owners.some((owner) => file.startsWith(owner))) found.push(node.text.slice(0, 40))
    }
    ts.forEachChild(node, visit)
  }
  if (!isStoreDriver(file)) visit(source)
  return found
}
const REALM_RULES = [
  { from: (file) => file.startsWith(IN_SANDBOX), refuses: (target) => !target.startsWith(IN_SANDBOX) && !SHARED_WITH_SANDBOX.some((shared) => target.startsWith(shared)), why: 'in-sandbox code imports only its folder and the modules shared by both realms' },
  { from: (file) => !file.startsWith(IN_SANDBOX) && !SANDBOX_ENTRIES.includes(file), refuses: (target) => target.startsWith(IN_SANDBOX), why: 'host code does not import in-sandbox code (it runs inside the VM or a thread)' },
  { from: (file) => file.startsWith('engine/'), refuses: (target) => target.startsWith('platforms/'), why: 'the engine imports no platform' },
]

/** What gen-bootstrap.mjs writes starts with this line (`_*-source.ts` are not even listed). */
const GENERATED_MARK = '// Generated by scripts/gen-bootstrap.mjs'
const scanner = ts.createScanner(ts.ScriptTarget.Latest, false)

/** Characters of comment tokens in `text`. */
function commentChars(text) {
  scanner.setText(text)
  let chars = 0
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia) chars += scanner.getTokenEnd() - scanner.getTokenStart()
  }
  return chars
}

/** Lines between the delimiters of the file's leading `@module` comment, or 0 without one. */
function headerLines(text) {
  const header = /^\/\*\*[\s\S]*?\*\//.exec(text)?.[0]
  return header === undefined || !header.includes('@module') ? 0 : header.split('\n').length - 2
}

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const posix = (path) => path.split(sep).join('/')

// --quiet (npm test): the report prints only when the check fails.
const quiet = process.argv.includes('--quiet')
const held = []
const report = (line) => (quiet ? held.push(line) : console.log(line))

function parseArgs(argv) {
  const only = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--quiet') continue
    if (arg === '--only' && argv[i + 1] !== undefined) only.push(...argv[++i].split(','))
    else if (arg.startsWith('--only=')) only.push(...arg.slice('--only='.length).split(','))
    else {
      console.error(`check-structure: unknown argument ${JSON.stringify(arg)} (usage: [--only folder,folder] [--quiet])`)
      process.exit(2)
    }
  }
  return only.map((folder) => folder.replace(/\/+$/, '')).filter((folder) => folder !== '')
}

/** Every TypeScript source below the roots, generated sandbox sources excluded. */
function listSources() {
  const out = []
  const walk = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (/\.(ts|tsx|mts|cts)$/.test(name) && !/^_.*-source\.ts$/.test(name)) out.push(path)
    }
  }
  for (const folder of ROOTS) if (existsSync(join(root, folder))) walk(join(root, folder))
  return out
}

/** Whether `source` imports (or re-exports) `name` from the file `target` (resolved like the import graph). */
function importsNameFrom(source, file, name, target, known) {
  for (const statement of source.statements) {
    const isImport = ts.isImportDeclaration(statement)
    if (!isImport && !ts.isExportDeclaration(statement)) continue
    const specifier = statement.moduleSpecifier
    if (specifier === undefined || !ts.isStringLiteral(specifier) || resolveSpecifier(file, specifier.text, known) !== target) continue
    const bindings = isImport ? statement.importClause?.namedBindings : statement.exportClause
    // `import * as x` or `export *` hands over every name.
    if (bindings === undefined || ts.isNamespaceImport(bindings) || ts.isNamespaceExport(bindings)) return true
    if (bindings.elements.some((element) => (element.propertyName ?? element.name).text === name)) return true
  }
  return false
}

/** `src/registry/x.ts` → `src/registry`; a file directly under a root → that root. */
function folderOf(file) {
  const parts = file.split('/')
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0]
}

function isFunctionLike(node) {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  )
}

/** A readable name for a function: its own, or the variable / property / class member it is assigned to. */
function nameOf(node, source) {
  if (node.name !== undefined && !ts.isComputedPropertyName(node.name)) return node.name.getText(source)
  if (ts.isConstructorDeclaration(node)) return `${node.parent.name?.getText(source) ?? '(class)'}.constructor`
  const parent = node.parent
  if (parent !== undefined) {
    if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) {
      return parent.name.getText(source)
    }
    if (ts.isExportAssignment(parent)) return 'export default'
    if (ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText(source).slice(0, 40)})`
  }
  return '(anonymous)'
}

/** The outermost functions of a file with their line counts (nested closures count in them). */
function measureFunctions(source, file) {
  const out = []
  const visit = (node) => {
    if (isFunctionLike(node) && node.body !== undefined) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line
      out.push({ file, line: start + 1, lines: end - start + 1, name: nameOf(node, source) })
      return // nested functions are part of this one
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return out
}

/** Every module specifier a file depends on: imports, re-exports, `import type`, `import()`, `import x = require()`. */
function specifiersOf(source) {
  const out = []
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      out.push(node.moduleSpecifier.text)
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      out.push(node.moduleReference.expression.text)
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] !== undefined && ts.isStringLiteral(node.arguments[0])) {
      out.push(node.arguments[0].text)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      out.push(node.argument.literal.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return out
}

/** Resolves a relative specifier (`./x.js` written for `./x.ts`) to a known file, or undefined. */
function resolveSpecifier(fromFile, specifier, known) {
  if (!specifier.startsWith('.')) return undefined
  const base = posix(join(dirname(fromFile), specifier))
  const stem = base.replace(/\.(js|mjs|cjs|jsx)$/, '')
  for (const candidate of [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.cts`, `${stem}.d.ts`, `${base}/index.ts`]) {
    if (known.has(candidate)) return candidate
  }
  return undefined
}

/** Strongly connected components with more than one file (or a file importing itself), iteratively (Tarjan). */
function findCycles(graph) {
  let index = 0
  const indices = new Map()
  const low = new Map()
  const onStack = new Set()
  const stack = []
  const components = []
  for (const start of graph.keys()) {
    if (indices.has(start)) continue
    const work = [{ node: start, edges: [...graph.get(start)], i: 0 }]
    indices.set(start, index)
    low.set(start, index++)
    stack.push(start)
    onStack.add(start)
    while (work.length > 0) {
      const frame = work[work.length - 1]
      if (frame.i < frame.edges.length) {
        const next = frame.edges[frame.i++]
        if (!indices.has(next)) {
          indices.set(next, index)
          low.set(next, index++)
          stack.push(next)
          onStack.add(next)
          work.push({ node: next, edges: [...graph.get(next)], i: 0 })
        } else if (onStack.has(next)) {
          low.set(frame.node, Math.min(low.get(frame.node), indices.get(next)))
        }
        continue
      }
      work.pop()
      if (work.length > 0) {
        const parent = work[work.length - 1].node
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)))
      }
      if (low.get(frame.node) === indices.get(frame.node)) {
        const component = []
        let member
        do {
          member = stack.pop()
          onStack.delete(member)
          component.push(member)
        } while (member !== frame.node)
        if (component.length > 1 || graph.get(frame.node).has(frame.node)) components.push(component.sort())
      }
    }
  }
  return components
}

/** One concrete cycle through a component, for the message: a → b → … → a. */
function cyclePath(graph, component) {
  const members = new Set(component)
  const first = component[0]
  const previous = new Map([[first, undefined]])
  const queue = [first]
  while (queue.length > 0) {
    const node = queue.shift()
    for (const next of graph.get(node)) {
      if (!members.has(next)) continue
      if (next === first) {
        const path = [first]
        for (let at = node; at !== undefined && at !== first; at = previous.get(at)) path.splice(1, 0, at)
        return [...path, first]
      }
      if (!previous.has(next)) {
        previous.set(next, node)
        queue.push(next)
      }
    }
  }
  return [...component, first]
}

const only = parseArgs(process.argv.slice(2))
const files = listSources().map((path) => posix(relative(root, path)))
const known = new Set(files)
// `--only src` judges every folder of src/; `--only src/registry` that folder alone.
const covers = (o, folder) => folder === o || folder.startsWith(`${o}/`)
for (const o of only) {
  if (!files.some((file) => covers(o, folderOf(file)))) {
    console.error(`check-structure: --only names ${JSON.stringify(o)}, which holds no source file`)
    process.exit(2)
  }
}
const functions = []
const graph = new Map()
// Lifecycle rules broken: { file, problem }.
const lifecycle = []
const comments = { chars: 0, total: 0, files: 0 }
for (const file of files) {
  const text = readFileSync(join(root, file), 'utf8')
  if (!text.startsWith(GENERATED_MARK)) {
    comments.chars += commentChars(text)
    comments.total += text.length
    comments.files++
    const header = headerLines(text)
    if (header > MAX_HEADER_LINES) lifecycle.push({ file, problem: `@module header of ${header} lines: at most ${MAX_HEADER_LINES} (notes and measurements go to docs/)` })
  }
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS)
  functions.push(...measureFunctions(source, file))
  if (file !== LIFECYCLE_FILE && importsNameFrom(source, file, 'prepareRun', PREPARE_DEFINED_IN, known)) {
    lifecycle.push({ file, problem: `imports prepareRun: the run sequence lives in ${LIFECYCLE_FILE} (drive it with RunLifecycle)` })
  }
  for (const key of storeKeysNamed(source, file)) lifecycle.push({ file, problem: `names the store key ${JSON.stringify(key)}: only src/durable (and src/approvals for approvals/) knows store keys; go through runtime.runs or the broker` })
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
  if (TRUSTED_RUNTIMES.includes(file) && lines > MAX_TRUSTED_LINES) {
    lifecycle.push({ file, problem: `${lines} lines: a trusted runtime is a driver of at most ${MAX_TRUSTED_LINES} (shared code goes to src/code-runtime/)` })
  }
  const edges = new Set()
  for (const specifier of specifiersOf(source)) {
    const target = resolveSpecifier(file, specifier, known)
    if (target !== undefined) edges.add(target)
  }
  graph.set(file, edges)
  for (const rule of REALM_RULES) {
    if (!rule.from(file)) continue
    for (const target of edges) if (rule.refuses(target)) lifecycle.push({ file, problem: `imports ${target}: ${rule.why}` })
  }
}

const longFunctions = functions.filter((f) => f.lines > MAX_LINES)
const cycles = findCycles(graph).map((component) => ({ component, path: cyclePath(graph, component) }))
const show = (f) => `${String(f.lines).padStart(4)} lines  ${f.file}:${f.line}  ${f.name}`

report(`check-structure: ${files.length} files, ${functions.length} top-level functions, limit ${MAX_LINES} lines`)
report(`\nlongest functions:`)
for (const f of [...functions].sort((a, b) => b.lines - a.lines).slice(0, SHOW_LONGEST)) report(`  ${show(f)}`)
if (longFunctions.length > 0) {
  report(`\nfunctions over ${MAX_LINES} lines:`)
  for (const f of longFunctions.sort((a, b) => b.lines - a.lines)) report(`  ${show(f)}`)
}
report(`\nrun lifecycle: ${LIFECYCLE_FILE} alone imports prepareRun; trusted runtimes ${TRUSTED_RUNTIMES.map((file) => `${file} (${readFileSync(join(root, file), 'utf8').trimEnd().split('\n').length} lines)`).join(', ')}, at most ${MAX_TRUSTED_LINES} each`)
const share = comments.chars / comments.total
report(`\ncomment share: ${(100 * share).toFixed(1)} % (${comments.chars} of ${comments.total} characters in ${comments.files} hand-written files), at most ${100 * MAX_COMMENT_SHARE} %`)
if (lifecycle.length > 0) {
  report('\nrun lifecycle, realm and comment rules broken:')
  for (const { file, problem } of lifecycle) report(`  ${file}: ${problem}`)
}
if (cycles.length > 0) {
  report('\nimport cycles (type imports included):')
  for (const { component, path } of cycles) {
    const rest = component.filter((file) => !path.includes(file))
    report(`  ${path.join(' → ')}${rest.length > 0 ? `  (the same knot also holds ${rest.join(', ')})` : ''}`)
  }
}

// One verdict per folder: a long function counts against its own folder; a cycle against every folder it passes through.
const folders = new Map()
const entry = (folder) => {
  if (!folders.has(folder)) folders.set(folder, { long: 0, cycles: 0, lifecycle: 0 })
  return folders.get(folder)
}
for (const file of files) entry(folderOf(file))
for (const f of longFunctions) entry(folderOf(f.file)).long++
for (const { component } of cycles) for (const folder of new Set(component.map(folderOf))) entry(folder).cycles++
for (const { file } of lifecycle) entry(folderOf(file)).lifecycle++

const judged = (folder) => only.length === 0 || only.some((o) => covers(o, folder))
report('\nper folder:')
let failed = false
for (const folder of [...folders.keys()].sort()) {
  const { long, cycles: inCycles, lifecycle: broken } = folders.get(folder)
  const ok = long === 0 && inCycles === 0 && broken === 0
  const counted = judged(folder)
  if (!ok && counted) failed = true
  const problems = ok ? 'ok' : [long > 0 ? `${long} function(s) over ${MAX_LINES} lines` : '', inCycles > 0 ? `in ${inCycles} import cycle(s)` : '', broken > 0 ? `${broken} lifecycle, realm or comment rule(s) broken` : ''].filter(Boolean).join(', ')
  report(`  ${ok ? 'pass' : counted ? 'FAIL' : 'fail (not judged)'}  ${folder.padEnd(22)} ${problems}`)
}
// The share is judged on the whole (a folder's share says little), whatever --only says.
if (share > MAX_COMMENT_SHARE) {
  failed = true
  report(`\ncomment share ${(100 * share).toFixed(1)} % is over ${100 * MAX_COMMENT_SHARE} %: keep @module headers short, JSDoc on exported symbols, short "why" comments; history and measurements go to docs/`)
}
if (failed) {
  for (const line of held) console.log(line)
  console.error(`\ncheck-structure failed: split the long functions (a table of steps and one loop reads better than one long body) and break the cycles (move the shared piece into its own file); a run lifecycle rule broken: see docs/runtimes.md (One run lifecycle); too many comments: a short @module header, JSDoc on exported symbols, notes to docs/.`)
  process.exit(1)
}
console.log(quiet ? `check-structure: ok (${files.length} files, no function over ${MAX_LINES} lines, no import cycle, comments ${(100 * share).toFixed(1)} %)` : '\ncheck-structure: ok')
