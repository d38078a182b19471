/**
 * The Node Python sandbox thread's entry (bundled into `_python-thread.mjs` by
 * scripts/gen-bootstrap.mjs): hardens the realm, then serves the parent port.
 *
 * @module
 */
import { parentPort } from 'node:worker_threads'
import { loadMicroPython } from '@micropython/micropython-webassembly-pyscript'
import { hardenRealm, servePythonThread } from '../../engine/python/thread-server.js'

const port = parentPort
if (port !== null) {
  hardenRealm()
  servePythonThread(
    {
      post: (message) => port.postMessage(message),
      onMessage: (listener) => port.on('message', listener),
    },
    loadMicroPython,
  )
}
