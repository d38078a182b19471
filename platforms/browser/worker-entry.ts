/**
 * The browser runtime's Web Worker.
 * @module
 */
import * as Comlink from 'comlink'
import { startBootstrap } from '../../src/code-runtime/in-sandbox/bootstrap.js'
import type { BootstrapHandle } from '../../src/code-runtime/in-sandbox/bootstrap.js'
import type { WorkerControl, WorkerPorts } from './control.js'
import { answerHeartbeat } from './heartbeat-meter.js'

/** The worker's global scope, as far as this file uses it (the project's lib is DOM, not WebWorker). */
interface WorkerScope {
  addEventListener(type: 'error', listener: (event: ErrorEvent) => void): void
  addEventListener(type: 'unhandledrejection', listener: (event: PromiseRejectionEvent) => void): void
}

const scope = globalThis as unknown as WorkerScope
const endpoint = globalThis as unknown as Comlink.Endpoint

let attached = false
let handle: BootstrapHandle | undefined

// Failures the program's promise chain cannot see (a throw in a timer callback, an
// unhandled rejection) end the run as an exception instead of surfacing as a worker error.
scope.addEventListener('error', (event: ErrorEvent) => {
  if (handle === undefined) return
  event.preventDefault()
  handle.reportUncaught(event.error ?? new Error(event.message))
})
scope.addEventListener('unhandledrejection', (event: PromiseRejectionEvent) => {
  if (handle === undefined) return
  event.preventDefault()
  handle.reportUncaught(event.reason)
})

const control: WorkerControl = {
  ping: () => 'pong',
  attach(ports: WorkerPorts) {
    if (attached) throw new Error('already attached')
    if (!(ports?.wire instanceof MessagePort) || !(ports.heartbeat instanceof MessagePort)) throw new Error('attach needs two MessagePorts')
    attached = true
    answerHeartbeat(ports.heartbeat)
    handle = startBootstrap(ports.wire)
    return 'attached'
  },
}

Comlink.expose(control, endpoint)
