/**
 * Signals for calls that ask a person, each cancellable on its own (one signal per call, as the
 * registry gives a call), and all withdrawn at once when a test is done with them.
 */
export class CallSignals {
  readonly #controllers: AbortController[] = []

  /** A fresh signal for one call. */
  signal(): AbortSignal {
    const controller = new AbortController()
    this.#controllers.push(controller)
    return controller.signal
  }

  /** Aborts every signal handed out: the calls' requests are withdrawn. */
  abort(): void {
    for (const controller of this.#controllers) controller.abort()
  }
}
