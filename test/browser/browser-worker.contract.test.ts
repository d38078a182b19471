import { createBrowserWorkerRuntime } from '../../platforms/browser/index.js'
import { describeCodeRuntimeContract } from '../contract/code-runtime-contract.js'

// The shared CodeRuntime contract suite, in real Chromium, against a fresh module Web Worker per run.
describeCodeRuntimeContract('browser web-worker (Chromium)', (options) => createBrowserWorkerRuntime(options), {
  memoryLimit: 'a page cannot cap the heap of a Web Worker; a memory bomb takes the tab down (docs/playground.md)',
  capturesStdio: 'a Web Worker has no stdout or stderr; console output already travels over the private port',
  confinesAuthority: 'trusted-code runtime: a program has the page origin\'s authority (fetch, storage) (docs/runtimes.md)',
})
