// The published MicroPython wasm port ships no typings; the thread uses this much of it.
declare module '@micropython/micropython-webassembly-pyscript' {
  import type { MicroPythonLoader } from './thread-server.js'
  export const loadMicroPython: MicroPythonLoader
}
