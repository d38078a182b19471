// The generated loader (scripts/build-micropython-bounded.mjs) ships no typings; the runtime uses this much of it.
import type { MicroPythonLoader } from '../../engine/python/thread-server.js'
export const loadMicroPython: MicroPythonLoader
