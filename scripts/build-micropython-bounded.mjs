#!/usr/bin/env node
// Builds the edge Python interpreter (toolyard/python) from the PINNED npm package
// @micropython/micropython-webassembly-pyscript 1.27.0, byte for byte reproducibly:
//   - platforms/python/_micropython-bounded.wasm: the package's micropython.wasm with a step
//     meter: every wasm `loop` body starts by counting down a new mutable global; at zero it
//     resets it and calls a new import, `env.toolyard_budget_check`, which throws once the run's
//     budget is spent. Every unbounded execution passes a loop header (recursion is bounded by
//     the stack), so `while True: pass` and any C-side loop are stopped inline, where nothing
//     can terminate the isolate. The published build calls no import in such a loop.
//   - platforms/python/_micropython-bounded.mjs: the package's loader, with `instantiateWasm`
//     passed through so the caller instantiates (the module workerd requires, the extra import),
//     and `printErr` (emscripten's own complaints stay out of the host's console); a collected
//     PyProxy is freed in the interpreter that made it (many share one realm inline); its Node-only
//     `import("fs")` and the like become `process.getBuiltinModule` calls, so an edge bundle has no `import()`.
// Why not rebuild MicroPython from C: its source is not reachable from a fresh machine here
// (only the npm registry and Debian packages are), so such a script could not be reproduced
// in CI; rewriting the published binary needs only the pinned package (sha256-checked).
//
// `--check` rebuilds in memory and exits 1 when a committed file differs (`npm run build` runs it).
import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const PKG = `${root}node_modules/@micropython/micropython-webassembly-pyscript/`
const INPUTS = {
  'micropython.wasm': '', // filled below from the pins
  'micropython.mjs': '',
}
/** sha256 of the pinned package's files (1.27.0): any other input is refused. */
export const PINNED = {
  'micropython.wasm': '06338c955b03c5700aa0069015d3e392d76836ef8e2ce25bedbe59b88ccd373c',
  'micropython.mjs': 'c2be87e7ba24e3b47d133022b009a66bff07f4720aa23d816d216ef8cc47014c',
}
/** Loop iterations between two calls of the check (the step unit). */
export const STEPS_PER_CHECK = 10_000
export const CHECK_IMPORT = 'toolyard_budget_check'
const OUT_WASM = 'platforms/python/_micropython-bounded.wasm'
const OUT_MJS = 'platforms/python/_micropython-bounded.mjs'

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex')

// --- LEB128 ---------------------------------------------------------------------------
function u32(out, value) {
  do {
    let byte = value & 0x7f
    value >>>= 7
    if (value !== 0) byte |= 0x80
    out.push(byte)
  } while (value !== 0)
}
function s32(out, value) {
  for (;;) {
    const byte = value & 0x7f
    value >>= 7
    if ((value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0)) {
      out.push(byte)
      return
    }
    out.push(byte | 0x80)
  }
}
const name = (out, text) => {
  const bytes = new TextEncoder().encode(text)
  u32(out, bytes.length)
  out.push(...bytes)
}

class Reader {
  constructor(bytes, pos = 0, end = bytes.length) {
    this.b = bytes
    this.pos = pos
    this.end = end
  }
  byte() {
    if (this.pos >= this.end) throw new Error('wasm: read past the end')
    return this.b[this.pos++]
  }
  u32() {
    let result = 0
    let shift = 0
    for (;;) {
      const byte = this.byte()
      result |= (byte & 0x7f) << shift
      if ((byte & 0x80) === 0) return result >>> 0
      shift += 7
      if (shift > 35) throw new Error('wasm: LEB128 too long')
    }
  }
  /** Skips a signed LEB128 of any width. */
  sleb() {
    while (this.byte() & 0x80);
  }
  skip(n) {
    this.pos += n
  }
  name() {
    const n = this.u32()
    const text = new TextDecoder().decode(this.b.subarray(this.pos, this.pos + n))
    this.pos += n
    return text
  }
}

/** A block type: 0x40, a value type, or a type index (s33). */
function blockType(r) {
  const first = r.b[r.pos]
  if (first === 0x40 || (first >= 0x6f && first <= 0x7f)) r.pos++
  else r.sleb()
}

/**
 * Re-encodes one function body: call/return_call/ref.func indices shifted by `shift` at and
 * above `from`, and the meter after every `loop`. Any opcode this port's build does not use
 * (SIMD, exceptions, GC) is refused rather than guessed.
 */
function rewriteBody(bytes, start, end, fix, meter) {
  const r = new Reader(bytes, start, end)
  const out = []
  // Locals: copied as they are.
  const groups = r.u32()
  for (let i = 0; i < groups; i++) {
    r.u32()
    r.byte()
  }
  out.push(...bytes.subarray(start, r.pos))
  let copied = r.pos
  const flush = (upTo) => {
    for (let i = copied; i < upTo; i++) out.push(bytes[i])
    copied = upTo
  }
  while (r.pos < end) {
    const at = r.pos
    const op = r.byte()
    if (op === 0x03) {
      blockType(r)
      flush(r.pos)
      out.push(...meter)
    } else if (op === 0x02 || op === 0x04) blockType(r)
    else if (op === 0x10 || op === 0x12 || op === 0xd2) {
      const index = r.u32()
      flush(at)
      out.push(op)
      u32(out, fix(index))
      copied = r.pos
    } else if (op === 0x0c || op === 0x0d || (op >= 0x20 && op <= 0x26)) r.u32()
    else if (op === 0x0e) {
      const n = r.u32()
      for (let i = 0; i <= n; i++) r.u32()
    } else if (op === 0x11 || op === 0x13) {
      r.u32()
      r.u32()
    } else if (op === 0x1c) {
      const n = r.u32()
      r.skip(n)
    } else if (op >= 0x28 && op <= 0x3e) {
      const align = r.u32()
      if (align & 0x40) throw new Error('wasm: multi-memory is not supported')
      r.u32()
    } else if (op === 0x3f || op === 0x40) r.byte()
    else if (op === 0x41 || op === 0x42) r.sleb()
    else if (op === 0x43) r.skip(4)
    else if (op === 0x44) r.skip(8)
    else if (op === 0xd0) r.byte()
    else if (op === 0xfc) {
      const sub = r.u32()
      if (sub <= 7 || sub === 11) {
        if (sub === 11) r.byte()
      } else if (sub === 8) {
        r.u32()
        r.byte()
      } else if (sub === 10) {
        r.byte()
        r.byte()
      } else if (sub === 9 || sub === 13 || (sub >= 15 && sub <= 17)) r.u32()
      else if (sub === 12 || sub === 14) {
        r.u32()
        r.u32()
      } else throw new Error(`wasm: opcode 0xfc ${sub} is not supported`)
    } else if (op <= 0x01 || op === 0x05 || op === 0x0b || op === 0x0f || op === 0x1a || op === 0x1b || (op >= 0x45 && op <= 0xc4) || op === 0xd1) {
      // No immediates.
    } else throw new Error(`wasm: opcode 0x${op.toString(16)} at byte ${at} is not supported`)
  }
  flush(end)
  return out
}

/** The meter put at the top of every loop body (4 + LEB bytes of global and function indices). */
function meterCode(global, check) {
  const code = [0x23]
  u32(code, global) // global.get
  code.push(0x41, 0x01, 0x6b) // i32.const 1; i32.sub
  code.push(0x24)
  u32(code, global) // global.set
  code.push(0x23)
  u32(code, global)
  code.push(0x45, 0x04, 0x40) // i32.eqz; if
  code.push(0x41)
  s32(code, STEPS_PER_CHECK)
  code.push(0x24)
  u32(code, global)
  code.push(0x10)
  u32(code, check)
  code.push(0x0b)
  return code
}

/** Rewrites the module; returns the new bytes. */
export function meterWasm(input) {
  const bytes = new Uint8Array(input)
  if (bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d || bytes[4] !== 1) throw new Error('wasm: not a version 1 module')
  const r = new Reader(bytes, 8)
  const sections = []
  while (r.pos < bytes.length) {
    const id = r.byte()
    const size = r.u32()
    const start = r.pos
    sections.push({ id, start, end: start + size, name: id === 0 ? new Reader(bytes, start, start + size).name() : undefined })
    r.pos = start + size
  }
  const section = (id) => sections.find((s) => s.id === id)
  // Types: find `[] -> []`, or add it.
  const types = section(1)
  const tr = new Reader(bytes, types.start, types.end)
  const typeCount = tr.u32()
  let voidType = -1
  for (let i = 0; i < typeCount; i++) {
    if (tr.byte() !== 0x60) throw new Error('wasm: a non-function type')
    const params = tr.u32()
    tr.skip(params)
    const results = tr.u32()
    tr.skip(results)
    if (params === 0 && results === 0 && voidType < 0) voidType = i
  }
  const newTypes = voidType < 0 ? typeCount + 1 : typeCount
  if (voidType < 0) voidType = typeCount
  // Imports: count functions and globals; add the check as the last function import.
  const imports = section(2)
  const ir = new Reader(bytes, imports.start, imports.end)
  const importCount = ir.u32()
  let importedFuncs = 0
  let importedGlobals = 0
  for (let i = 0; i < importCount; i++) {
    const module = ir.name()
    const field = ir.name()
    const kind = ir.byte()
    if (module === 'env' && field === CHECK_IMPORT) throw new Error('wasm: already metered')
    if (kind === 0) {
      ir.u32()
      importedFuncs++
    } else if (kind === 1) {
      ir.byte()
      const flags = ir.u32()
      ir.u32()
      if (flags & 1) ir.u32()
    } else if (kind === 2) {
      const flags = ir.u32()
      ir.u32()
      if (flags & 1) ir.u32()
    } else if (kind === 3) {
      ir.byte()
      ir.byte()
      importedGlobals++
    } else throw new Error(`wasm: import kind ${kind} is not supported`)
  }
  const check = importedFuncs
  const fix = (index) => (index >= check ? index + 1 : index)
  const globals = section(6)
  const definedGlobals = globals === undefined ? 0 : new Reader(bytes, globals.start, globals.end).u32()
  const counter = importedGlobals + definedGlobals
  const meter = meterCode(counter, check)

  const out = [...bytes.subarray(0, 8)]
  const emit = (id, body) => {
    out.push(id)
    u32(out, body.length)
    for (const b of body) out.push(b)
  }
  const rest = (s, reader) => bytes.subarray(reader.pos, s.end)
  let globalsDone = false
  for (const s of sections) {
    const body = []
    if (s.id === 0) {
      // The name section names functions by index: dropped rather than renumbered (stack traces lose names, nothing else).
      if (s.name === 'name') continue
      out.push(0)
      u32(out, s.end - s.start)
      for (let i = s.start; i < s.end; i++) out.push(bytes[i])
      continue
    }
    if (s.id === 7 && !globalsDone) throw new Error('wasm: exports before globals')
    if (s.id === 1) {
      u32(body, newTypes)
      const reader = new Reader(bytes, s.start, s.end)
      reader.u32()
      body.push(...rest(s, reader))
      if (newTypes > typeCount) body.push(0x60, 0, 0)
    } else if (s.id === 2) {
      u32(body, importCount + 1)
      const reader = new Reader(bytes, s.start, s.end)
      reader.u32()
      // Function imports are numbered in order of appearance, whatever kinds sit between them.
      body.push(...rest(s, reader))
      name(body, 'env')
      name(body, CHECK_IMPORT)
      body.push(0)
      u32(body, voidType)
    } else if (s.id === 6) {
      globalsDone = true
      u32(body, definedGlobals + 1)
      const reader = new Reader(bytes, s.start, s.end)
      reader.u32()
      body.push(...rest(s, reader))
      body.push(0x7f, 0x01, 0x41)
      s32(body, STEPS_PER_CHECK)
      body.push(0x0b)
    } else if (s.id === 7) {
      const reader = new Reader(bytes, s.start, s.end)
      const n = reader.u32()
      u32(body, n)
      for (let i = 0; i < n; i++) {
        name(body, reader.name())
        const kind = reader.byte()
        const index = reader.u32()
        body.push(kind)
        u32(body, kind === 0 ? fix(index) : index)
      }
    } else if (s.id === 8) {
      u32(body, fix(new Reader(bytes, s.start, s.end).u32()))
    } else if (s.id === 9) {
      const reader = new Reader(bytes, s.start, s.end)
      const n = reader.u32()
      u32(body, n)
      for (let i = 0; i < n; i++) {
        const segmentStart = reader.pos
        const flags = reader.u32()
        if (flags > 3) throw new Error(`wasm: element segment kind ${flags} is not supported`)
        if (flags === 2) reader.u32()
        if (flags === 0 || flags === 2) {
          // The offset: a constant expression up to its `end`.
          while (reader.byte() !== 0x0b);
        }
        if (flags !== 0) reader.byte()
        body.push(...bytes.subarray(segmentStart, reader.pos))
        const count = reader.u32()
        u32(body, count)
        for (let j = 0; j < count; j++) u32(body, fix(reader.u32()))
      }
    } else if (s.id === 10) {
      const reader = new Reader(bytes, s.start, s.end)
      const n = reader.u32()
      u32(body, n)
      for (let i = 0; i < n; i++) {
        const size = reader.u32()
        const code = rewriteBody(bytes, reader.pos, reader.pos + size, fix, meter)
        u32(body, code.length)
        for (const b of code) body.push(b)
        reader.pos += size
      }
    } else {
      for (let i = s.start; i < s.end; i++) body.push(bytes[i])
    }
    emit(s.id, body)
  }
  if (!globalsDone) throw new Error('wasm: no global section')
  return new Uint8Array(out)
}

/** The loader, with the caller's `instantiateWasm` and `printErr` passed to emscripten and its Node built-in imports opaque to bundlers. */
export function patchLoader(source) {
  const from = 'let Module={locateFile:(path,scriptDirectory)=>url||scriptDirectory+path};'
  if (source.split(from).length !== 2) throw new Error('loader: the Module literal was not found exactly once')
  let out = source.replace(from, 'let Module={locateFile:(path,scriptDirectory)=>url||scriptDirectory+path,instantiateWasm:options.instantiateWasm,printErr:options.printErr};')
  // A collected PyProxy frees its object in the interpreter that made it, not in whichever one's
  // globals are in place when the collector runs (inline, many interpreters share one realm), and
  // a dead interpreter's free cannot throw into the host.
  const registry = 'globalThis.pyProxyFinalizationRegistry=new FinalizationRegistry(cRef=>{globalThis.proxy_js_map.delete(cRef),Module.ccall("proxy_c_free_obj","null",["number"],[cRef])})'
  if (out.split(registry).length !== 2) throw new Error('loader: the finalization registry was not found exactly once')
  out = out.replace(
    registry,
    'globalThis.pyProxyFinalizationRegistry=((m,map)=>new FinalizationRegistry(cRef=>{try{map.delete(cRef),m.ccall("proxy_c_free_obj","null",["number"],[cRef])}catch{}}))(Module,globalThis.proxy_js_map)',
  )
  // Its Node-only branches import Node built-ins: taken from `process.getBuiltinModule` (Node ≥ 20.16) instead, so the
  // loader has no `import()` at all: no bundler resolves one, and no module walker (Miniflare's, wrangler's) meets a computed one.
  for (const builtin of ['module', 'path', 'url', 'fs']) {
    const literal = `import("${builtin}")`
    if (out.split(literal).length !== 2) throw new Error(`loader: ${literal} was not found exactly once`)
    out = out.replace(literal, `Promise.resolve(globalThis.process.getBuiltinModule("node:${builtin}"))`)
  }
  if (/\bimport\(/.test(out)) throw new Error('loader: an import() is left')
  return (
    '// Generated by scripts/build-micropython-bounded.mjs from @micropython/micropython-webassembly-pyscript 1.27.0\n' +
    '// (MIT): `options.instantiateWasm` and `options.printErr` are passed to emscripten, a collected PyProxy\n' +
    '// is freed in its own interpreter, and the Node-only imports are process.getBuiltinModule calls (no import()).\n' +
    '// Do not edit.\n' +
    out
  )
}

/** Builds both outputs from the package; throws when an input is not the pinned one. */
export function buildBounded() {
  const wasm = readFileSync(PKG + 'micropython.wasm')
  const mjs = readFileSync(PKG + 'micropython.mjs')
  for (const [file, bytes] of [['micropython.wasm', wasm], ['micropython.mjs', mjs]]) {
    const got = sha256(bytes)
    if (got !== PINNED[file]) throw new Error(`${file}: sha256 ${got}, not the pinned ${PINNED[file]} (1.27.0)`)
    INPUTS[file] = got
  }
  return { [OUT_WASM]: meterWasm(wasm), [OUT_MJS]: Buffer.from(patchLoader(mjs.toString('utf8'))) }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outputs = buildBounded()
  const check = process.argv.includes('--check')
  let stale = false
  for (const [file, bytes] of Object.entries(outputs)) {
    const path = root + file
    if (check) {
      let committed = ''
      try {
        committed = sha256(readFileSync(path))
      } catch {
        // Missing: stale.
      }
      if (committed !== sha256(bytes)) {
        console.error(`${file} is stale: run \`node scripts/build-micropython-bounded.mjs\``)
        stale = true
      }
    } else {
      writeFileSync(path, bytes)
      console.log(`${file}: ${bytes.length} bytes, sha256 ${sha256(bytes)}`)
    }
  }
  if (!check) console.log(`inputs: ${JSON.stringify(INPUTS)}`)
  if (stale) process.exit(1)
}
