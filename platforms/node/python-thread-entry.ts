/**
 * The Node Python sandbox thread's entry, bundled by `scripts/gen-bootstrap.mjs` into
 * `_python-thread.mjs` (the MicroPython package stays an import Node resolves next to
 * the file). It hardens the realm, then connects the parent port to the thread server.
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
