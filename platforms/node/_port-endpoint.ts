/**
 * Adapts a Node `MessagePort` to the platform-neutral {@link WireEndpoint}.
 * @module
 */
import type { MessagePort } from 'node:worker_threads'
import type { WireEndpoint, WireListener } from '../../src/code-runtime/wire.js'

/** Wraps `port` as a {@link WireEndpoint} (`postMessage` + message listeners). */
export function portEndpoint(port: MessagePort): WireEndpoint {
  const post = port.postMessage.bind(port)
  const on = port.on.bind(port)
  const off = port.off.bind(port)
  const wrapped = new Map<WireListener, (data: unknown) => void>()
  return {
    postMessage: (message) => post(message),
    addEventListener: (_type, listener) => {
      if (wrapped.has(listener)) return
      const handler = (data: unknown) => listener({ data })
      wrapped.set(listener, handler)
      on('message', handler)
    },
    removeEventListener: (_type, listener) => {
      const handler = wrapped.get(listener)
      if (handler === undefined) return
      wrapped.delete(listener)
      off('message', handler)
    },
  }
}
