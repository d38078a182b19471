/**
 * The inside of a sandbox thread: QuickJS runs here one program at a time, and builds the
 * next run's sandbox between runs. Platform-neutral; programs never run in its realm.
 *
 * @module
 */
import type { QuickJSSyncVariant } from 'quickjs-emscripten-core'
import { BUSY_SLOT, epochNow, MAX_VM_MESSAGE_CHARS, SEGMENT_SLOT, STOP_SLOT } from '../../src/code-runtime/sandbox-protocol.js'
import type { SandboxThreadBoot, ThreadCommand, ThreadEvent } from '../../src/code-runtime/sandbox-protocol.js'
import type { stripTypeScript } from '../../src/code-runtime/strip.js'
import { toErrorData } from '../../src/errors.js'
import { QuickJsEngine } from './engine.js'
import type { QuickJsImage, QuickJsSandbox } from './engine.js'
import { VmRun } from './vm-run.js'

/** The TypeScript stripper (`stripTypeScript`). */
export type Stripper = typeof stripTypeScript

/** The thread's channel to the host. */
export interface SandboxThreadChannel {
  /** Sends a control event, or a VM message (a bare string). */
  post(message: ThreadEvent | string): void
  /** Receives the boot message, commands and VM deliveries. */
  onMessage(listener: (data: unknown) => void): void
}

/**
 * Strips the TypeScript of a run's `start` message (JSON text from the host) here, in
 * the thread: sucrase's work is bounded (`stripTypeScript`), and whatever it costs
 * happens where the host's meter sees it and a stuck thread can be terminated, never on
 * the host's own event loop. A start without a string `program` passes unchanged.
 */
function stripStart(start: string, message: { program?: unknown }, stripTypeScript: () => Stripper): { readonly ok: true; readonly start: string; readonly plain?: string } | { readonly ok: false; readonly message: string } {
  if (typeof message.program !== 'string') return { ok: true, start }
  if (plainScript(message.program)) return { ok: true, start, plain: message.program }
  const stripped = stripTypeScript()(message.program)
  if (!stripped.ok) return stripped
  return { ok: true, start: JSON.stringify({ ...message, program: stripped.code }) }
}

/**
 * For a run that skipped the stripper ({@link plainScript}): the stripper's refusal of `program` when
 * the VM's message `json` ends the run with a SyntaxError, so a syntax error reads the same
 * (line and column) as when the stripper ran first; undefined otherwise.
 */
function strippersRefusal(json: string, program: string, stripTypeScript: () => Stripper): string | undefined {
  if (json.length > 65_536 || !json.includes('"SyntaxError"')) return undefined
  const message = JSON.parse(json) as { type?: unknown; error?: { name?: unknown } }
  if (message.type !== 'done' || message.error?.name !== 'SyntaxError') return undefined
  const stripped = stripTypeScript()(program)
  return stripped.ok ? undefined : stripped.message
}

/** The longest program {@link plainScript} looks at: past it, sucrase's own bounds apply. */
const PLAIN_MAX_CHARS = 2_000
/** Characters that can begin no TypeScript-only syntax (no `:`, `<`, `!`, `?`, `@`, `/`, backtick, `#`). */
const PLAIN_CHARS = /^[\w$\s.,;()[\]{}=+\-*%&|^~>'"]*$/
/** Words that begin TypeScript-only syntax without those characters (`type A = B`, `enum`, `x as const`, overloads, modifiers…). */
const TS_WORDS = /\b(?:type|interface|enum|declare|namespace|module|abstract|implements|private|public|protected|readonly|override|accessor|as|satisfies|is|keyof|infer|asserts|unique|global|import|export|function|class|this)\b/

/**
 * True for a short program that sucrase would return unchanged: only characters and words that
 * begin no TypeScript syntax, brackets nested at most 32 deep. Such a program (a `return 1`, a
 * call with positional arguments) skips the stripper, whose first call in a thread is its JIT's
 * cold pass (tens of ms); a SyntaxError that ends such a run is reported as the stripper words it.
 */
export function plainScript(program: string): boolean {
  if (program.length > PLAIN_MAX_CHARS || !PLAIN_CHARS.test(program) || TS_WORDS.test(program)) return false
  let depth = 0
  for (let i = 0; i < program.length; i++) {
    const code = program.charCodeAt(i)
    if (code === 40 || code === 91 || code === 123) {
      if (++depth > 32) return false
    } else if (code === 41 || code === 93 || code === 125) {
      depth--
    }
  }
  return true
}

/** Idle time after a thread's `ready` before it warms its stripper: a run that follows at once never waits for it. */
const WARM_AFTER_IDLE_MS = 250

/** Idle time after a thread's first `ready` before it starts readying the image, if no run came first. */
const SCAN_AFTER_IDLE_MS = 50

let stripperWarm = false
/**
 * Warms the stripper, its backtracking paths included, once, in idle time after a thread's
 * first run: later strips skip the JIT's warm-up (a cold refusal of a pathological program
 * measured 4 times a warm one), and the first run does not wait for it.
 */
function warmStripper(stripTypeScript: Stripper): void {
  if (stripperWarm) return
  stripperWarm = true
  stripTypeScript('const warm = (a: number = (b = 1) => b): number => <number>(<number>(a as number))\nreturn <T,>(x: T) => x')
}

/** Whether this thread's scan started, the host asked for the image at boot (it keeps none), and this thread took it. */
interface ImageAsk {
  scanning: boolean
  wanted: boolean
  taken: boolean
}

/**
 * Readies the memory image, once (a fresh instance scanned in ~2 ms steps, one a task, between a
 * run's messages too): the thread's next boot takes it, and later VMs are reset in place from it.
 */
function startScan(engine: QuickJsEngine | undefined, memoryMb: number, ask: ImageAsk): void {
  if (ask.scanning || engine === undefined) return
  ask.scanning = true
  void engine.scanInSteps(memoryMb, () => new Promise((resolve) => setTimeout(resolve, 0)))
}

/** Posts `image` to the host (next task), its bytes in shared memory: sent to every thread the host starts later, never copied. */
function postImage(channel: SandboxThreadChannel, memoryMb: number, image: QuickJsImage, ask: ImageAsk): void {
  ask.taken = true
  setTimeout(() => {
    const bytes = new Uint8Array(new SharedArrayBuffer(image.memory.bytes.length))
    bytes.set(image.memory.bytes)
    channel.post({ type: 'image', memoryMb, image: { ...image, memory: { ...image.memory, bytes } } } as unknown as ThreadEvent)
  }, 0)
}

/**
 * The host is about to end this thread (its runtime disposed, or idle) and keeps no image yet: the
 * scan (`scan` starts it) runs to its end without pauses, and the image goes out before the thread
 * does, else the process's next threads would boot their VMs too. `imaging` at once, then the
 * image, or `no-image` when there is none to give.
 */
function answerImageAsk(channel: SandboxThreadChannel, engine: QuickJsEngine | undefined, memoryMb: number, ask: ImageAsk, scan: () => void): void {
  const noImage = (): void => {
    if (!ask.taken) channel.post({ type: 'no-image' } as unknown as ThreadEvent)
  }
  if (engine === undefined || !ask.wanted || ask.taken) {
    noImage()
    return
  }
  channel.post({ type: 'imaging' } as unknown as ThreadEvent)
  scan()
  void engine.hurryScan(memoryMb).then(noImage)
}

interface Current {
  readonly id: number
  readonly vm: VmRun
}

/**
 * Serves one host over `channel`: waits for the boot message, builds the first sandbox,
 * says `ready`, then runs each `run` command to its `end`. `loadStripper` is called when a
 * program first needs the stripper (sucrase is most of a thread's code: a `return 1` never loads it).
 */
export function serveSandboxThread(channel: SandboxThreadChannel, variant: QuickJSSyncVariant, loadStripper: () => Stripper): void {
  let loaded: Stripper | undefined
  const stripper = (): Stripper => (loaded ??= loadStripper())
  let engine: QuickJsEngine | undefined
  let memoryMb = 64
  let stop: Int32Array | undefined
  let busy: Float64Array | undefined
  let current: Current | undefined
  let ready: QuickJsSandbox | undefined
  let building: Promise<QuickJsSandbox | undefined> | undefined
  /** Runs started so far: the idle-time warm-up is skipped when one came meanwhile. */
  let runsStarted = 0
  const ask: ImageAsk = { scanning: false, wanted: false, taken: false }
  const scan = (): void => startScan(engine, memoryMb, ask)

  /** Builds the next sandbox unless one is ready or being built; a failed build is left for the next run to retry and report. */
  const prebuild = (): Promise<QuickJsSandbox | undefined> => {
    if (engine === undefined || ready !== undefined) return Promise.resolve(ready)
    building ??= engine.build(memoryMb).then(
      (sandbox) => {
        building = undefined
        ready = sandbox
        return sandbox
      },
      () => {
        building = undefined
        return undefined
      },
    )
    return building
  }
  const acquire = async (): Promise<QuickJsSandbox> => {
    if (ready === undefined) await prebuild()
    const sandbox = ready
    ready = undefined
    return sandbox ?? engine!.build(memoryMb)
  }

  const start = (command: ThreadCommand & { type: 'run' }): void => {
    const id = command.run
    runsStarted++
    // Stripping is the run's first compute: published live, so the host's meter charges it (and can stop a thread stuck in it).
    const stripStartedAt = performance.now()
    if (busy !== undefined) {
      busy[BUSY_SLOT] = 0
      busy[SEGMENT_SLOT] = epochNow()
    }
    // A resumed run's program was stripped when it first ran: its journal holds the stripped start.
    const message = command.replay === undefined ? (JSON.parse(command.start) as { program?: unknown }) : undefined
    let loadMs = 0
    if (loaded === undefined && typeof message?.program === 'string' && !plainScript(message.program)) {
      // Loading the stripper is the thread's own start-up, not the run's compute.
      const loadStartedAt = performance.now()
      stripper()
      loadMs = performance.now() - loadStartedAt
      if (busy !== undefined) busy[SEGMENT_SLOT] = epochNow()
    }
    const stripped = message === undefined ? ({ ok: true, start: '' } as const) : stripStart(command.start, message, stripper)
    const stripMs = performance.now() - stripStartedAt - loadMs
    if (busy !== undefined) {
      busy[BUSY_SLOT] = stripMs
      busy[SEGMENT_SLOT] = 0
    }
    if (!stripped.ok) {
      // No VM was taken: the host ends the run, and `end` finds nothing current.
      channel.post({ type: 'failed', run: id, kind: 'exception', message: stripped.message })
      return
    }
    if (stripMs >= command.computeMs) {
      channel.post({ type: 'failed', run: id, kind: 'timeout', message: `compute budget of ${command.computeMs} ms exhausted` })
      return
    }
    // The host session enforces the wall ceiling (and may hold it while a person decides); the thread's clock runs.
    // The VM checks its own compute against the whole budget; the strip time it does not
    // see is in the busy figure the host meters (where memory is shared), which ends the run first.
    const plain = 'plain' in stripped ? stripped.plain : undefined
    const limits = { computeMs: command.computeMs, memoryMb, ...(command.replayMs === undefined ? {} : { replayMs: command.replayMs }) }
    const vm: VmRun = new VmRun(acquire, limits, {
      output: (json) => {
        // Past the VM's own check only a program that broke its bootstrap gets here: end its run.
        const refusal = plain === undefined ? undefined : strippersRefusal(json, plain, stripper)
        if (refusal !== undefined) channel.post({ type: 'failed', run: id, kind: 'exception', message: refusal })
        else if (json.length > MAX_VM_MESSAGE_CHARS) vm.fail('exception', `a message from the program took ${Math.ceil(json.length / 1024 / 1024)} MiB; at most ${MAX_VM_MESSAGE_CHARS / 1024 / 1024} MiB go to the host at once`)
        else channel.post(json)
      },
      fail: (kind, message) => channel.post({ type: 'failed', run: id, kind, message }),
      ...(stop === undefined ? {} : { stopRequested: () => Atomics.load(stop!, STOP_SLOT) === id }),
      ...(busy === undefined
        ? {}
        : {
            segment: (running: boolean, busyMs: number) => {
              busy![BUSY_SLOT] = stripMs + busyMs
              busy![SEGMENT_SLOT] = running ? epochNow() : 0
            },
          }),
      replayed: (busyMs) => channel.post({ type: 'replayed', run: id, busyMs: stripMs + busyMs }),
    }, command.replay === undefined ? { journal: command.journal !== false } : { replay: command.replay })
    current = { id, vm }
    if (command.replay === undefined) vm.input(stripped.start)
  }

  /** Parks the current run if it is idle enough: its journal goes to the host, its VM is released as at `end`. */
  const park = (id: number, afterMs: number, maxChars: number): void => {
    const run = current
    if (run === undefined || run.id !== id) return
    const parked = run.vm.park(afterMs, maxChars)
    if (parked === undefined) {
      channel.post({ type: 'park-refused', run: id })
      return
    }
    channel.post({ type: 'parked', run: id, parked })
  }

  const end = (id: number): void => {
    const run = current
    if (run === undefined || run.id !== id) {
      channel.post({ type: 'ended', run: id })
      // A run refused before it took a VM (a syntax error) leaves the built one for the next.
      if (run === undefined && ready !== undefined) channel.post({ type: 'ready' })
      return
    }
    run.vm.stop()
    void run.vm.finished.then(() => {
      current = undefined
      if (stop !== undefined) Atomics.compareExchange(stop, STOP_SLOT, id, 0)
      channel.post({ type: 'ended', run: id })
      // Whether or not idle time comes: until its scan ends, each VM would be a fresh instance (see QuickJsEngine.build).
      scan()
      // Idle time: build the next run's sandbox now, then say so (the host prefers primed threads).
      setTimeout(() => {
        if (current !== undefined) return
        void prebuild().then(() => {
          channel.post({ type: 'ready' })
          // The stripper's cold pass (tens of ms, 100+ under load) only once the thread has stayed idle
          // after saying ready: a run sent right after this one never waits for it.
          if (stripperWarm) return
          const seen = runsStarted
          setTimeout(() => {
            if (current === undefined && runsStarted === seen) warmStripper(stripper())
          }, WARM_AFTER_IDLE_MS)
        })
      }, 0)
    })
  }

  const boot = (data: SandboxThreadBoot): void => {
    memoryMb = data.memoryMb
    if (data.signals !== undefined) {
      stop = new Int32Array(data.signals)
      busy = new Float64Array(data.signals)
    }
    const { image, wantsImage } = data as { image?: QuickJsImage; wantsImage?: boolean }
    engine = new QuickJsEngine({
      sandboxSource: data.sandboxSource,
      variant,
      imageInBuild: false,
      // A host that asks keeps the image for the threads it starts later: their first VM is restored, not booted.
      ...(wantsImage === true && image === undefined ? { onImage: (mb: number, taken: QuickJsImage) => postImage(channel, mb, taken, ask) } : {}),
      ...(data.wasmModule === undefined ? {} : { wasmModule: data.wasmModule }),
    })
    ask.wanted = wantsImage === true && image === undefined
    if (image !== undefined) engine.adoptImage(memoryMb, image)
    // Nothing before `ready` that a first `return 1` does not need: the stripper warms after the first run,
    // and the image's scan starts after it too (or once the thread has stayed idle a while).
    void prebuild().then((sandbox) => {
      channel.post(sandbox === undefined ? { type: 'ready' } : { type: 'ready', made: sandbox.made })
      setTimeout(() => {
        if (runsStarted === 0) scan()
      }, SCAN_AFTER_IDLE_MS)
    })
  }

  channel.onMessage((data) => {
    try {
      if (typeof data === 'string') {
        current?.vm.input(data)
        return
      }
      const message = data as { type?: unknown }
      if (message.type === 'boot' && engine === undefined) boot(data as SandboxThreadBoot)
      else if (message.type === 'run' && engine !== undefined && current === undefined) start(data as ThreadCommand & { type: 'run' })
      else if (message.type === 'end') end((data as { run: number }).run)
      else if (message.type === 'image') answerImageAsk(channel, engine, memoryMb, ask, scan)
      else if (message.type === 'park') {
        const command = data as { run: number; afterMs: number; maxChars: number }
        park(command.run, command.afterMs, command.maxChars)
      }
    } catch (error) {
      // Our own code failed: report it as the run's failure rather than leave the host waiting.
      if (current !== undefined) channel.post({ type: 'failed', run: current.id, kind: 'worker-exit', message: `the sandbox thread failed: ${toErrorData(error).message}` })
    }
  })
}
