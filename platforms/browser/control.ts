/**
 * The trusted host → worker control API, spoken with comlink over the worker's own
 * message channel. It is used only before any program code exists in the worker (a
 * handshake, then handing over the private ports); after that the host releases the
 * proxy and never reads the worker's main channel again, because a program can post
 * to it (and dispatch events on it) at will.
 *
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
