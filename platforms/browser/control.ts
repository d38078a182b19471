/**
 * The trusted host → worker control API, spoken with comlink over the worker's own message channel.
 * @module
 */

/** The ports handed to a fresh worker, once, before its program is sent. */
export interface WorkerPorts {
  /** The wire protocol port (src/code-runtime/wire.ts), private to the bootstrap. */
  readonly wire: MessagePort
  /** The heartbeat port, private to the bootstrap's ping answerer. */
  readonly heartbeat: MessagePort
}

/** What a worker exposes over comlink. */
export interface WorkerControl {
  /** The handshake: resolves once the worker module (bootstrap included) has loaded. */
  ping(): 'pong'
  /**
   * Hands over the private ports. One-shot: a second call (a program forging a comlink
   * message on its own global scope, say) is refused.
   */
  attach(ports: WorkerPorts): 'attached'
}
