/**
 * The sandbox's web globals as units, most of them differentially against this realm's
 * own (Node's TextEncoder/TextDecoder, atob/btoa, structuredClone, URL): a QuickJS program
 * must see what a program on any other platform sees.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { SANDBOX_GLOBAL_NAMES } from '../../../src/code-runtime/in-sandbox/sandbox-globals.js'
import { fakeHost, sandboxGlobals } from './sandbox-globals-harness.js'

/** UTF-16 strings with lone surrogates, astral characters and every range in between. */
const utf16 = fc.string({ unit: fc.oneof(fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), fc.constantFrom('\ud83d\ude00', '\ud800', '\udc00', 'é', '€', '\u007f', '\u0080', '\u07ff', '\u0800')), maxLength: 24 })
/** Byte strings biased to UTF-8 lead and continuation bytes and the boundaries of their ranges. */
const bytes = fc.array(fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x7f, 0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0x9f, 0xa0, 0x8f, 0x90)), { maxLength: 24 }).map((a) => new Uint8Array(a))

const thrown = (fn: () => unknown): { name: string; message: string } | undefined => {
  try {
    fn()
    return undefined
  } catch (error) {
    return { name: (error as Error).name, message: (error as Error).message }
  }
}

describe('installSandboxGlobals', () => {
  it('installs exactly the listed globals, writable, configurable and not enumerable', () => {
    expect(SANDBOX_GLOBAL_NAMES).toEqual(['performance', 'crypto', 'URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder', 'atob', 'btoa', 'structuredClone'])
    const { descriptors } = sandboxGlobals()
    for (const name of SANDBOX_GLOBAL_NAMES) expect(descriptors[name]).toMatchObject({ writable: true, configurable: true, enumerable: false })
  })

  it('names the classes as the web does', () => {
    const g = sandboxGlobals()
    expect([g.URL.name, g.URLSearchParams.name, g.TextEncoder.name, g.TextDecoder.name]).toEqual(['URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder'])
  })

  it('performance.now is the host clock, on a frozen null-prototype object', () => {
    const host = fakeHost({ now: 42.25 })
    const { performance } = sandboxGlobals(host)
    expect(performance.now()).toBe(42.25)
    expect(host.ops).toEqual(['now'])
    expect(Object.getPrototypeOf(performance)).toBeNull()
    expect(Object.isFrozen(performance)).toBe(true)
    expect(Object.keys(performance)).toEqual(['now'])
  })
})

describe('TextEncoder', () => {
  it('encodes like the platform, lone surrogates as U+FFFD', () => {
    const { TextEncoder: Encoder } = sandboxGlobals()
    const ours = new Encoder()
    const theirs = new TextEncoder()
    fc.assert(
      fc.property(utf16, (text) => {
        expect(ours.encode(text)).toEqual(theirs.encode(text))
      }),
      { numRuns: 300 },
    )
    expect(ours.encoding).toBe('utf-8')
    expect(ours.encode()).toEqual(new Uint8Array(0))
    expect(ours.encode(12 as never)).toEqual(new Uint8Array([0x31, 0x32]))
  })

  it('encodeInto writes whole characters only, like the platform', () => {
    const { TextEncoder: Encoder } = sandboxGlobals()
    fc.assert(
      fc.property(utf16, fc.integer({ min: 0, max: 40 }), (text, size) => {
        const a = new Uint8Array(size)
        const b = new Uint8Array(size)
        expect(new Encoder().encodeInto(text, a)).toEqual(new TextEncoder().encodeInto(text, b))
        expect(a).toEqual(b)
      }),
      { numRuns: 300 },
    )
    expect(thrown(() => new Encoder().encodeInto('x', [] as never))).toEqual({ name: 'TypeError', message: 'The "destination" argument must be a Uint8Array' })
  })
})

describe('TextDecoder', () => {
  it('decodes like the platform, replacing each maximal invalid subpart', () => {
    const { TextDecoder: Decoder } = sandboxGlobals()
    fc.assert(
      fc.property(bytes, (input) => {
        expect(new Decoder().decode(input)).toBe(new TextDecoder().decode(input))
      }),
      { numRuns: 500 },
    )
  })

  it('fatal: throws where the platform throws, with its TypeError', () => {
    const { TextDecoder: Decoder } = sandboxGlobals()
    fc.assert(
      fc.property(bytes, (input) => {
        const ours = thrown(() => new Decoder('utf-8', { fatal: true }).decode(input))
        const theirs = thrown(() => new TextDecoder('utf-8', { fatal: true }).decode(input))
        expect(ours === undefined).toBe(theirs === undefined)
        if (ours !== undefined) expect(ours).toEqual({ name: 'TypeError', message: 'The encoded data was not valid for encoding utf-8' })
        else expect(new Decoder('utf-8', { fatal: true }).decode(input)).toBe(new TextDecoder().decode(input))
      }),
      { numRuns: 300 },
    )
  })

  it('streams: a sequence split across chunks decodes like the platform', () => {
    const { TextDecoder: Decoder } = sandboxGlobals()
    fc.assert(
      fc.property(bytes, fc.array(fc.integer({ min: 0, max: 24 }), { maxLength: 4 }), fc.boolean(), (input, cuts, ignoreBOM) => {
        const ours = new Decoder('utf-8', { ignoreBOM })
        const theirs = new TextDecoder('utf-8', { ignoreBOM })
        const points = [...new Set(cuts.map((c) => Math.min(c, input.length)))].sort((x, y) => x - y)
        let a = ''
        let b = ''
        let from = 0
        for (const to of points) {
          a += ours.decode(input.subarray(from, to), { stream: true })
          b += theirs.decode(input.subarray(from, to), { stream: true })
          from = to
        }
        a += ours.decode(input.subarray(from))
        b += theirs.decode(input.subarray(from))
        expect(a).toBe(b)
        // The decoder is reusable after a final decode.
        expect(ours.decode(input)).toBe(theirs.decode(input))
      }),
      { numRuns: 500 },
    )
  })

  it('drops one leading BOM per stream unless ignoreBOM', () => {
    const { TextDecoder: Decoder } = sandboxGlobals()
    const bom = [0xef, 0xbb, 0xbf]
    const twice = new Uint8Array([...bom, ...bom, 0x61])
    expect(new Decoder().decode(twice)).toBe('\ufeffa')
    expect(new Decoder('utf-8', { ignoreBOM: true }).decode(twice)).toBe('\ufeff\ufeffa')
    const streaming = new Decoder()
    expect(streaming.decode(new Uint8Array(bom.slice(0, 2)), { stream: true })).toBe('')
    expect(streaming.decode(new Uint8Array([bom[2]!, 0x62]), { stream: true })).toBe('b')
    expect(streaming.decode(new Uint8Array([...bom, 0x63]))).toBe('\ufeffc')
    expect(streaming.decode(new Uint8Array([...bom, 0x64]))).toBe('d')
  })

  it('decodes long inputs whole (more than one internal chunk)', () => {
    const { TextDecoder: Decoder } = sandboxGlobals()
    const text = `${'a'.repeat(5000)}é${'😀'.repeat(3000)}`
    expect(new Decoder().decode(new TextEncoder().encode(text))).toBe(text)
  })

  it('accepts the UTF-8 labels only, and any buffer source', () => {
    const { TextDecoder: Decoder } = sandboxGlobals()
    for (const label of ['utf-8', 'utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8', ' UTF-8 ', 'Utf8']) {
      expect(new Decoder(label).encoding).toBe('utf-8')
    }
    expect(thrown(() => new Decoder('latin1'))).toEqual({ name: 'RangeError', message: 'The encoding "latin1" is not supported (the sandbox decodes utf-8 only)' })
    const d = new Decoder(undefined, { fatal: 1, ignoreBOM: 'yes' } as never)
    expect([d.encoding, d.fatal, d.ignoreBOM]).toEqual(['utf-8', true, true])
    const plain = new Decoder()
    expect([plain.fatal, plain.ignoreBOM]).toEqual([false, false])
    const buffer = new Uint8Array([0x78, 0x61, 0x62, 0x79]).buffer
    expect(plain.decode(buffer)).toBe('xaby')
    expect(plain.decode(new DataView(buffer, 1, 2))).toBe('ab')
    expect(plain.decode(new Uint16Array(buffer, 2, 1))).toBe('by')
    expect(plain.decode()).toBe('')
    expect(thrown(() => plain.decode('text' as never))).toEqual({ name: 'TypeError', message: 'The "input" argument must be an ArrayBuffer or an ArrayBufferView' })
  })
})

describe('atob and btoa', () => {
  it('btoa matches the platform on Latin-1 text and refuses anything wider', () => {
    const { btoa: ours } = sandboxGlobals()
    const latin1 = fc.string({ unit: fc.integer({ min: 0, max: 255 }).map((c) => String.fromCharCode(c)), maxLength: 20 })
    fc.assert(
      fc.property(latin1, (text) => {
        expect(ours(text)).toBe(btoa(text))
      }),
      { numRuns: 300 },
    )
    expect(ours(null)).toBe(btoa('null'))
    for (const wide of ['\u0100', 'a\u0100', 'ab\u0100', '€']) {
      expect(thrown(() => ours(wide))).toEqual({ name: 'InvalidCharacterError', message: 'Invalid character: btoa() takes a string of Latin-1 characters' })
    }
  })

  it('atob is the forgiving decode: the platform’s results and refusals', () => {
    const { atob: ours } = sandboxGlobals()
    const alphabet = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split(''), '=', ' ', '\n', '\t', '\f', '\r', '-', '_', '*')
    fc.assert(
      fc.property(fc.string({ unit: alphabet, maxLength: 16 }), (text) => {
        const theirs = thrown(() => atob(text))
        const mine = thrown(() => ours(text))
        expect(mine === undefined).toBe(theirs === undefined)
        if (mine === undefined) expect(ours(text)).toBe(atob(text))
        else expect(mine).toEqual({ name: 'InvalidCharacterError', message: 'The string to be decoded is not correctly encoded.' })
      }),
      { numRuns: 1000 },
    )
    for (const text of ['YQ==', 'YQ=', 'YQ', 'YWI=', 'YWJj', ' Y W J j ', 'YQ===', 'Y', 'YQ=a', '', '====']) {
      expect(thrown(() => ours(text))?.name ?? ours(text)).toEqual(thrown(() => atob(text))?.name ?? atob(text))
    }
  })
})

describe('structuredClone', () => {
  it('copies what it can like the platform, keeping shared references and cycles', () => {
    const { structuredClone: clone } = sandboxGlobals()
    const shared = { s: 1 }
    const cyclic: Record<string, unknown> = { a: [shared, shared], d: new Date(5), r: /x+/gi, m: new Map([[shared, 'v']]), set: new Set([shared]) }
    cyclic.self = cyclic
    const copy = clone(cyclic) as Record<string, unknown>
    expect(copy).toEqual(structuredClone(cyclic))
    expect(copy).not.toBe(cyclic)
    expect(copy.self).toBe(copy)
    const [x, y] = copy.a as object[]
    expect(x).toBe(y)
    expect(x).not.toBe(shared)
    expect([...(copy.m as Map<object, string>).keys()][0]).toBe(x)
    expect([...(copy.set as Set<object>)][0]).toBe(x)
    expect((copy.d as Date).getTime()).toBe(5)
    expect(copy.d).not.toBe(cyclic.d)
    expect(String(copy.r)).toBe('/x+/gi')
    expect(copy.r).not.toBe(cyclic.r)
  })

  it('copies primitives, wrappers, sparse arrays and binary data', () => {
    const { structuredClone: clone } = sandboxGlobals()
    for (const p of [1, 'x', null, undefined, true, 10n, -0]) expect(Object.is(clone(p), p)).toBe(true)
    const wrappers = clone([Object(true), Object(2), Object('s'), Object(3n)]) as object[]
    expect(wrappers.map((w) => typeof w)).toEqual(['object', 'object', 'object', 'object'])
    expect(wrappers.map((w) => (w as { valueOf(): unknown }).valueOf())).toEqual([true, 2, 's', 3n])
    // eslint-disable-next-line no-sparse-arrays
    const sparse = clone([1, , 3]) as unknown[]
    expect(sparse).toHaveLength(3)
    expect(1 in sparse).toBe(false)
    const buffer = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]).buffer
    const view = new Int16Array(buffer, 2, 2)
    const copied = clone({ buffer, view, dv: new DataView(buffer, 1, 3), f: new Float64Array([1.5]), big: new BigUint64Array([7n]) }) as { buffer: ArrayBuffer; view: Int16Array; dv: DataView; f: Float64Array; big: BigUint64Array }
    expect(copied.view).toBeInstanceOf(Int16Array)
    expect([...copied.view]).toEqual([...view])
    expect([copied.view.byteOffset, copied.view.length]).toEqual([2, 2])
    expect(copied.view.buffer).toBe(copied.buffer)
    expect(copied.view.buffer).not.toBe(buffer)
    expect(copied.dv).toBeInstanceOf(DataView)
    expect([copied.dv.byteOffset, copied.dv.byteLength, copied.dv.buffer === copied.buffer]).toEqual([1, 3, true])
    expect([...copied.f]).toEqual([1.5])
    expect([...copied.big]).toEqual([7n])
    for (const Typed of [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array]) {
      const out = clone(new Typed([1, 2])) as ArrayLike<number>
      expect(out).toBeInstanceOf(Typed)
      expect(Array.from(out)).toEqual([1, 2])
    }
    expect(clone(new BigInt64Array([-1n]))).toEqual(new BigInt64Array([-1n]))
  })

  it('copies errors by their standard type, message and stack', () => {
    const { structuredClone: clone } = sandboxGlobals()
    for (const E of [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError]) {
      const error = new E('msg')
      const copy = clone(error) as Error
      expect(copy).toBeInstanceOf(E)
      expect([copy.name, copy.message, copy.stack]).toEqual([error.name, 'msg', error.stack])
    }
    const custom = new (class Custom extends Error {
      override name = 'Custom'
    })('c')
    expect(clone(custom)).toBeInstanceOf(Error)
    expect((clone(custom) as Error).name).toBe('Error')
    const noStack = new Error('n')
    Object.defineProperty(noStack, 'stack', { value: 42 })
    expect(Object.getOwnPropertyDescriptor(clone(noStack) as object, 'stack')?.value).not.toBe(42)
    const stack = Object.getOwnPropertyDescriptor(clone(new Error('s')) as object, 'stack')
    expect(stack).toMatchObject({ configurable: true, writable: true })
  })

  it('refuses what cannot be cloned with a DataCloneError naming it', () => {
    const { structuredClone: clone } = sandboxGlobals()
    const refusal = (value: unknown, options?: { transfer?: unknown }) => thrown(() => clone(value, options))
    expect(refusal(function named() {})).toEqual({ name: 'DataCloneError', message: 'function named could not be cloned.' })
    expect(refusal({ f: (() => () => 1)() })).toEqual({ name: 'DataCloneError', message: 'A function could not be cloned.' })
    expect(refusal(Symbol('s'))).toEqual({ name: 'DataCloneError', message: 'Symbol(s) could not be cloned.' })
    expect(refusal(Promise.resolve())).toEqual({ name: 'DataCloneError', message: '#<Promise> could not be cloned.' })
    expect(refusal(new WeakMap())).toEqual({ name: 'DataCloneError', message: '#<WeakMap> could not be cloned.' })
    expect(refusal(new WeakSet())).toEqual({ name: 'DataCloneError', message: '#<WeakSet> could not be cloned.' })
    expect(refusal(new WeakRef({}))).toEqual({ name: 'DataCloneError', message: '#<WeakRef> could not be cloned.' })
    expect(refusal(1, { transfer: [new ArrayBuffer(1)] })).toEqual({ name: 'DataCloneError', message: 'A transfer list could not be cloned.' })
    expect(refusal(1, { transfer: 'x' })).toEqual({ name: 'DataCloneError', message: 'A transfer list could not be cloned.' })
    expect(clone(1, { transfer: [] })).toBe(1)
    expect(clone(2, {})).toBe(2)
  })

  it('clones plain objects by own enumerable keys into plain objects', () => {
    const { structuredClone: clone } = sandboxGlobals()
    const source = Object.create({ inherited: 1 }) as Record<string, unknown>
    source.own = { deep: [1] }
    Object.defineProperty(source, 'hidden', { value: 1, enumerable: false })
    const copy = clone(source) as Record<string, unknown>
    expect(copy).toEqual({ own: { deep: [1] } })
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    expect(copy.own).not.toBe(source.own)
  })
})

describe('URL', () => {
  const inputs = ['https://user:pw@example.com:8080/a/b?x=1&y=2#frag', 'http://example.com', 'file:///tmp/x', 'https://例え.jp/パス?q=値', 'mailto:a@b.c']

  it('parses like the platform, with every component', () => {
    const { URL: SandboxURL } = sandboxGlobals()
    for (const input of inputs) {
      const ours = new SandboxURL(input) as unknown as Record<string, unknown>
      const theirs = new URL(input) as unknown as Record<string, unknown>
      for (const key of ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash']) expect(ours[key]).toBe(theirs[key])
      expect(String(ours)).toBe(input === 'http://example.com' ? 'http://example.com/' : theirs.href)
      expect((ours as { toJSON(): string }).toJSON()).toBe(theirs.href)
    }
    expect(new SandboxURL('../c?d', 'https://h.example/a/b').href).toBe('https://h.example/c?d')
  })

  it('refuses what the platform refuses, and says so', () => {
    const { URL: SandboxURL } = sandboxGlobals()
    expect(thrown(() => new SandboxURL('not a url'))).toEqual({ name: 'TypeError', message: 'Invalid URL: not a url' })
    expect(thrown(() => new SandboxURL(''))).toEqual({ name: 'TypeError', message: 'Invalid URL: ' })
    expect(SandboxURL.canParse('https://a.example')).toBe(true)
    expect(SandboxURL.canParse('/relative')).toBe(false)
    expect(SandboxURL.canParse('/relative', 'https://a.example')).toBe(true)
    expect(SandboxURL.parse('nope')).toBeNull()
    expect(SandboxURL.parse('/x', 'https://a.example')?.href).toBe('https://a.example/x')
  })

  it('its setters go through the host parser; href refuses garbage, the others ignore it', () => {
    const { URL: SandboxURL } = sandboxGlobals()
    const url = new SandboxURL('https://a.example/p?q=1#h')
    url.pathname = '/other path'
    url.hash = 'top'
    url.port = '8443'
    url.port = 'nonsense'
    expect(url.href).toBe('https://a.example:8443/other%20path?q=1#top')
    url.search = '?k=v'
    expect(url.searchParams.get('k')).toBe('v')
    url.href = 'http://b.example/'
    expect(url.host).toBe('b.example')
    expect(thrown(() => {
      url.href = 'garbage'
    })).toEqual({ name: 'TypeError', message: 'Invalid URL: garbage' })
    expect(url.href).toBe('http://b.example/')
    for (const key of ['protocol', 'username', 'password', 'host', 'hostname']) {
      const d = Object.getOwnPropertyDescriptor(SandboxURL.prototype, key)!
      expect([d.enumerable, d.configurable, typeof d.get, typeof d.set]).toEqual([true, true, 'function', 'function'])
    }
    url.username = 'me'
    url.password = 'pw'
    url.protocol = 'https'
    url.hostname = 'c.example'
    expect(url.href).toBe('https://me:pw@c.example/')
    url.host = 'd.example:81'
    expect(url.href).toBe('https://me:pw@d.example:81/')
  })

  it('searchParams is one live object: its changes write the query back, a new query reaches it', () => {
    const { URL: SandboxURL } = sandboxGlobals()
    const url = new SandboxURL('https://a.example/?b=2&a=1&b=3')
    const params = url.searchParams
    expect(url.searchParams).toBe(params)
    params.append('c', 'x y')
    expect(url.search).toBe('?b=2&a=1&b=3&c=x+y')
    params.delete('b', '3')
    expect(url.search).toBe('?b=2&a=1&c=x+y')
    params.set('b', '9')
    params.sort()
    expect(url.href).toBe('https://a.example/?a=1&b=9&c=x+y')
    params.delete('a')
    expect(url.search).toBe('?b=9&c=x+y')
    url.search = '?z=26'
    expect([...params]).toEqual([['z', '26']])
    url.hash = 'h'
    expect([...params]).toEqual([['z', '26']])
  })

  it('its methods refuse an object that is not a URL', () => {
    const { URL: SandboxURL } = sandboxGlobals()
    const fake = Object.create(SandboxURL.prototype) as URL
    expect(thrown(() => fake.href)).toEqual({ name: 'TypeError', message: 'Illegal invocation' })
    expect(thrown(() => fake.toString())).toEqual({ name: 'TypeError', message: 'Illegal invocation' })
    expect(thrown(() => fake.origin)).toEqual({ name: 'TypeError', message: 'Illegal invocation' })
  })
})

describe('URLSearchParams', () => {
  it('builds from a query string, pairs or a record, like the platform', () => {
    const { URLSearchParams: Params } = sandboxGlobals()
    for (const init of ['?a=1&b=2&a=3', 'a=%20x&=e&f', '', [['k', 'v'], ['k', 'w']], { x: 1, y: 'z' }, new Map([['m', 'n']])] as unknown[]) {
      expect([...new Params(init as never)]).toEqual([...new URLSearchParams(init as never)])
    }
    expect([...new Params()]).toEqual([])
    // The standard converts null to the string "null" (Node's own class answers '' instead).
    expect(new Params(null as never).toString()).toBe('null=')
    expect(thrown(() => new Params([['only-one']] as never))).toEqual({ name: 'TypeError', message: 'Each URLSearchParams init pair must have exactly two elements' })
    expect(thrown(() => new Params([['a', 'b', 'c']] as never))).toEqual({ name: 'TypeError', message: 'Each URLSearchParams init pair must have exactly two elements' })
  })

  it('its methods behave like the platform’s', () => {
    const { URLSearchParams: Params } = sandboxGlobals()
    const ours = new Params('a=1&b=2&a=3&c=4')
    const theirs = new URLSearchParams('a=1&b=2&a=3&c=4')
    const same = () => {
      expect([...ours]).toEqual([...theirs])
      expect(ours.toString()).toBe(theirs.toString())
      expect(ours.size).toBe(theirs.size)
    }
    expect([ours.get('a'), ours.get('zz'), ours.getAll('a'), ours.getAll('zz')]).toEqual([theirs.get('a'), null, theirs.getAll('a'), []])
    expect([ours.has('a'), ours.has('a', '3'), ours.has('a', '9'), ours.has('zz')]).toEqual([true, true, false, false])
    ours.set('a', 'x')
    theirs.set('a', 'x')
    same()
    ours.set('new', 'n')
    theirs.set('new', 'n')
    same()
    ours.append('b', '0')
    theirs.append('b', '0')
    ours.delete('b', '2')
    theirs.delete('b', '2')
    same()
    ours.delete('c')
    theirs.delete('c')
    same()
    ours.append('B', '1')
    theirs.append('B', '1')
    ours.append('a', '0')
    theirs.append('a', '0')
    ours.sort()
    theirs.sort()
    same()
    expect([...ours.keys()]).toEqual([...theirs.keys()])
    expect([...ours.values()]).toEqual([...theirs.values()])
    expect([...ours.entries()]).toEqual([...theirs.entries()])
    const seen: unknown[] = []
    const self = {}
    ours.forEach(function (this: unknown, value, key, parent) {
      seen.push([value, key, parent === ours, this === self])
    }, self)
    expect(seen).toEqual([...theirs].map(([k, v]) => [v, k, true, true]))
  })

  it('refuses an object that is not one', () => {
    const { URLSearchParams: Params } = sandboxGlobals()
    const fake = Object.create(Params.prototype) as URLSearchParams
    expect(thrown(() => fake.get('a'))).toEqual({ name: 'TypeError', message: 'Illegal invocation' })
    expect(thrown(() => fake.size)).toEqual({ name: 'TypeError', message: 'Illegal invocation' })
  })
})

describe('crypto', () => {
  it('getRandomValues fills any integer array with the host’s bytes, in order', () => {
    const host = fakeHost({ random: (n) => Array.from({ length: n }, (_, i) => (i + 1).toString(16).padStart(2, '0')).join('') })
    const { crypto } = sandboxGlobals(host)
    expect([...crypto.getRandomValues(new Uint8Array(4))]).toEqual([1, 2, 3, 4])
    expect([...crypto.getRandomValues(new Uint16Array(2))]).toEqual([0x0201, 0x0403])
    const offset = new Uint8Array(6)
    crypto.getRandomValues(offset.subarray(2, 4))
    expect([...offset]).toEqual([0, 0, 1, 2, 0, 0])
    for (const Typed of [Int8Array, Uint8ClampedArray, Int16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array]) {
      const array = new Typed(1)
      expect(crypto.getRandomValues(array)).toBe(array)
    }
    expect(host.ops.every((op) => op === 'random')).toBe(true)
  })

  it('refuses float arrays and more than 65,536 bytes', () => {
    const { crypto } = sandboxGlobals()
    expect(thrown(() => crypto.getRandomValues(new Float32Array(1)))).toEqual({ name: 'TypeMismatchError', message: 'crypto.getRandomValues needs an integer typed array' })
    expect(thrown(() => crypto.getRandomValues(new DataView(new ArrayBuffer(1))))).toEqual({ name: 'TypeMismatchError', message: 'crypto.getRandomValues needs an integer typed array' })
    expect(crypto.getRandomValues(new Uint8Array(65_536)).length).toBe(65_536)
    expect(thrown(() => crypto.getRandomValues(new Uint8Array(65_537)))).toEqual({ name: 'QuotaExceededError', message: 'crypto.getRandomValues: 65537 bytes requested, at most 65536 allowed' })
  })

  it('fails when the host gives no randomness or the wrong amount', () => {
    for (const random of [() => undefined, (n: number) => '00'.repeat(n - 1), (n: number) => '00'.repeat(n + 1)]) {
      const { crypto } = sandboxGlobals(fakeHost({ random }))
      expect(thrown(() => crypto.getRandomValues(new Uint8Array(2)))).toEqual({ name: 'Error', message: 'the host gave no randomness' })
    }
  })

  it('randomUUID is a version-4 UUID of the host’s bytes', () => {
    const { crypto } = sandboxGlobals(fakeHost({ random: () => '00112233445566778899aabbccddeeff' }))
    expect(crypto.randomUUID()).toBe('00112233-4455-4677-8899-aabbccddeeff')
    const ones = sandboxGlobals(fakeHost({ random: () => 'ff'.repeat(16) })).crypto
    expect(ones.randomUUID()).toBe('ffffffff-ffff-4fff-bfff-ffffffffffff')
    const zeros = sandboxGlobals(fakeHost({ random: () => '00'.repeat(16) })).crypto
    expect(zeros.randomUUID()).toBe('00000000-0000-4000-8000-000000000000')
    const { crypto: c } = sandboxGlobals()
    expect(Object.getPrototypeOf(c)).toBeNull()
    expect(Object.isFrozen(c)).toBe(true)
    expect(Object.keys(c)).toEqual(['getRandomValues', 'randomUUID'])
  })
})
