/**
 * The global environment a Code Mode program is type-checked in (console, timers, web-standard
 * globals, `catalog`), as TypeScript declarations.
 * @module
 */

/** The wrapper a program is checked in: the body of an async function, opened on the program's first line so line numbers stay the program's own. */
export const CHECK_WRAP_OPEN = 'async function __toolyard__() {'
/** Closes {@link CHECK_WRAP_OPEN} on a line of its own. */
export const CHECK_WRAP_CLOSE = '\n}'

/**
 * Declarations of the sandbox globals (kept to what `sandbox-globals.ts` and the
 * bootstraps install: a wider declaration would hide an unknown-name mistake, a
 * narrower one would flag working code).
 */
export const SANDBOX_GLOBALS_DECLARATIONS = `
interface Console {
  log(...data: any[]): void;
  info(...data: any[]): void;
  warn(...data: any[]): void;
  error(...data: any[]): void;
  debug(...data: any[]): void;
}
declare var console: Console;
declare function setTimeout(handler: (...args: any[]) => void, timeout?: number, ...args: any[]): number;
declare function setInterval(handler: (...args: any[]) => void, timeout?: number, ...args: any[]): number;
declare function clearTimeout(id?: number): void;
declare function clearInterval(id?: number): void;
declare function queueMicrotask(callback: () => void): void;
declare var performance: { now(): number; readonly timeOrigin: number };
declare var crypto: {
  randomUUID(): string;
  getRandomValues<T extends Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array>(array: T): T;
};
declare class URLSearchParams {
  constructor(init?: string | Record<string, string> | [string, string][] | URLSearchParams);
  readonly size: number;
  append(name: string, value: string): void;
  delete(name: string, value?: string): void;
  get(name: string): string | null;
  getAll(name: string): string[];
  has(name: string, value?: string): boolean;
  set(name: string, value: string): void;
  sort(): void;
  toString(): string;
  forEach(callback: (value: string, key: string, parent: URLSearchParams) => void): void;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  entries(): IterableIterator<[string, string]>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}
declare class URL {
  constructor(url: string | URL, base?: string | URL);
  static canParse(url: string | URL, base?: string | URL): boolean;
  href: string;
  readonly origin: string;
  protocol: string;
  username: string;
  password: string;
  host: string;
  hostname: string;
  port: string;
  pathname: string;
  search: string;
  readonly searchParams: URLSearchParams;
  hash: string;
  toString(): string;
  toJSON(): string;
}
declare class TextEncoder {
  readonly encoding: string;
  encode(input?: string): Uint8Array;
  encodeInto(source: string, destination: Uint8Array): { read: number; written: number };
}
declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  readonly encoding: string;
  readonly fatal: boolean;
  readonly ignoreBOM: boolean;
  decode(input?: ArrayBuffer | ArrayBufferView, options?: { stream?: boolean }): string;
}
declare function atob(data: string): string;
declare function btoa(data: string): string;
declare function structuredClone<T = any>(value: T): T;
interface ToolCatalogHit {
  readonly name: string;
  readonly description: string;
  /** The tool's TypeScript declaration. */
  readonly declaration: string;
}
/** Finds tools by words; describes one by name. */
declare const catalog: {
  search(query: string, options?: { limit?: number }): Promise<ToolCatalogHit[]>;
  describe(name: string): Promise<string>;
};
`
