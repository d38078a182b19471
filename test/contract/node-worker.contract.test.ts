import { createNodeWorkerRuntime } from '../../platforms/node/index.js'
import { describeCodeRuntimeContract } from './code-runtime-contract.js'

describeCodeRuntimeContract('node worker_threads', (options) => createNodeWorkerRuntime({ ...options, maxOldGenerationSizeMb: 64 }), { confinesAuthority: 'trusted-code runtime: a program has Node\'s authority (docs/runtimes.md)' })
