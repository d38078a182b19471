/**
 * The approval broker's seam: pending requests, what `decide()` takes and answers, and the
 * events subscribers receive. Its string unions cross HTTP and SSE: public contract.
 *
 * @module
 */
import type { DurableStore } from '../durable/store.js'
import type { JsonValue } from '../json/json-value.js'
import type { ApprovalHandler, ScopeKey } from '../types.js'

/** A person's answer to one request. */
export type ApprovalVerdict = 'allow' | 'deny'

/** Options of `createApprovalBroker` (and `createToolRuntime({ approvals })`); validated at construction (`INVALID_OPTIONS`). */
export interface ApprovalBrokerOptions {
  /**
   * How long a request waits for a decision before it expires as a denial, in
   * milliseconds: positive, finite, at most 2³¹−1 (≈ 24.8 days, the longest single
   * timer every runtime honours). Default `DEFAULT_APPROVAL_TIMEOUT_MS` (5 minutes).
   */
  readonly timeoutMs?: number
  /**
   * Whether the handler takes plan requests (one request per `run_code` program whose
   * planned tools ask; docs/approvals.md, "Plan approval"). Default `false`.
   */
  readonly plans?: boolean
  /**
   * Where the requests live. Every process whose broker shares the store lists and decides
   * them, and a call asked again under the same `callId` after a restart re-attaches to its
   * request. Default: the runtime's `store` under `createToolRuntime({ approvals })`, else
   * a memory store of this broker's own.
   */
  readonly store?: DurableStore
  /**
   * How often a waiting call looks in the store for a decision taken by another process, in
   * ms (at least 10; default 250): one listing of the settlements marked since, whatever the
   * number of waiting calls. Only while a call of this process waits; a decision taken
   * through this very broker reaches its call at once.
   */
  readonly pollIntervalMs?: number
  /**
   * How long a settled request (decided, expired, withdrawn) stays in the store, in ms, so
   * that a call resumed after a restart gets the decision taken while its process was
   * down, and a late `decide()` hears how it ended (default 24 hours).
   */
  readonly retainSettledMs?: number
}

/** One open request, as `pending()` and the events show it. Deep-frozen. */
export interface PendingApproval {
  /** Unguessable id (`crypto.randomUUID()`); the handle `decide()` takes. */
  readonly id: string
  /** The asking call's id (`<callId>:code:<n>` for a Code Mode sub-call). */
  readonly callId: string
  /**
   * The enclosing call's id for a nested call (a Code Mode sub-call's `run_code` call).
   * Present only when the registry passes `parentCallId` on the approval request.
   */
  readonly parentCallId?: string
  /** The calling agent's scope; absent for the global layer. */
  readonly agent?: ScopeKey
  /**
   * Who asked for the call (its execution's `principal`, a run's for its sub-calls and
   * plan): a non-secret label such as the HTTP app's principal id, never a token. Absent
   * when the caller named none.
   */
  readonly principal?: string
  /**
   * `'call'`: one tool call. `'plan'`: a whole `run_code` program before it runs (`callId`
   * and `name` are the `run_code` call's; `summary` shows the program and its planned
   * calls; Allow pre-approves the asking tools of `plan` for that run). See
   * docs/approvals.md, "Plan approval".
   */
  readonly kind: 'call' | 'plan'
  /** The tool's name (`run_code` for a plan). */
  readonly name: string
  /**
   * The call's arguments (lossless JSON, deep-frozen). The broker keeps them
   * only up to 16 KiB of JSON (64 levels); larger ones are `null` there, with
   * `argumentsOmitted: true` (the `summary` still shows them, bounded).
   */
  readonly arguments: JsonValue
  /**
   * The canonical hash of the call's validated arguments (SHA-256 of their JSON with sorted
   * keys, hashed in 32 KiB slices; 64 hex digits): a stored decision is bound to it.
   */
  readonly argumentsHash?: string
  /** `true` when the broker left `arguments` out (too large to keep); absent otherwise. */
  readonly argumentsOmitted?: true
  /**
   * The arguments as a person should read them (`renderApprovalArguments`): the tool's
   * declared parameters in schema order, long values as length + head + tail, undeclared
   * keys flagged and listed last; at most 4,096 UTF-8 bytes. Show this, not `arguments`.
   */
  readonly summary: string
  /**
   * What the call will do, from the tool's `preview` (a diff, "overwrites 12 lines"),
   * rendered by `renderApprovalPreview`: escaped, at most 4,096 UTF-8 bytes, a cut said;
   * or `preview unavailable: <reason>`. Absent when the tool has no preview. Show it
   * beside `summary`: the summary says what the call asks, the preview what it changes.
   */
  readonly preview?: string
  /** For a plan: the planned calls (name, line) and each asking tool's reason. The program itself is in `summary`, bounded. */
  readonly plan?: PendingPlan
  /** Why the gate asked (the `ask` decision's reason), when it gave one. */
  readonly reason?: string
  /** When the request was opened (epoch ms). */
  readonly requestedAt: number
  /** When it expires as a denial if nobody decides (epoch ms). */
  readonly expiresAt: number
}

/** A plan request's calls, as `pending()` lists them (the program's text is only in the bounded `summary`). */
export interface PendingPlan {
  /** The program's length in characters. */
  readonly codeLength: number
  /** Planned calls, at most `MAX_PENDING_PLAN_CALLS` (the rest are counted in `moreCalls`). */
  readonly calls: readonly { readonly name: string; readonly line: number }[]
  readonly moreCalls: number
  /** The tools whose gate asks: what Allow pre-approves. */
  readonly asking: readonly { readonly name: string; readonly reason?: string }[]
  /** `true`: the program reaches tools by computed names; nothing is pre-approved. */
  readonly dynamic: boolean
}

/** The body of `decide()` (and of `POST /v1/approvals/:id`), validated strictly. */
export interface ApprovalDecisionInput {
  readonly decision: ApprovalVerdict
  /** Shown to the model in the denial message; recorded with an allow. At most `MAX_APPROVAL_REASON_LENGTH` characters. */
  readonly reason?: string
}

/**
 * Who decides, as `decide()`'s third argument: the role the decision is attributed to (the
 * HTTP app passes its principal's, `approve` or `admin`); kept with the settlement and put
 * on the `toolyard.approval.decided` span event. A short lower-case label, never a token.
 */
export interface ApprovalDecider {
  readonly role: string
  /**
   * The agent layer the decider acts for (the HTTP app passes a pinned token's `agent`):
   * a request of another agent, or of the global layer, is refused as `APPROVAL_NOT_FOUND`,
   * as one that never existed. Absent: requests of every agent.
   */
  readonly agent?: string
}

/**
 * Why `decide()` refused. Stable codes; the HTTP app maps them to statuses:
 * - `INVALID_DECISION` → 400: the id is not a string, or the body is not exactly
 *   `{ decision: 'allow' | 'deny', reason?: string }`;
 * - `APPROVAL_NOT_FOUND` → 404: no such request (never existed, or settled so long ago
 *   that the broker no longer remembers it);
 * - `APPROVAL_EXPIRED` → 404: it expired (and was denied) before this decision;
 * - `APPROVAL_WITHDRAWN` → 404: the call was cancelled, so there is nothing to decide;
 * - `APPROVAL_ALREADY_DECIDED` → 409: someone decided it first;
 * - `BROKER_DISPOSED` → 503: the broker was disposed (everything it held was denied).
 */
export type ApprovalDecideErrorCode =
  | 'INVALID_DECISION'
  | 'APPROVAL_NOT_FOUND'
  | 'APPROVAL_EXPIRED'
  | 'APPROVAL_WITHDRAWN'
  | 'APPROVAL_ALREADY_DECIDED'
  | 'BROKER_DISPOSED'

/** `decide()` applied the decision. */
export interface ApprovalDecided {
  readonly ok: true
  /** The request as it was pending. */
  readonly approval: PendingApproval
  readonly decision: ApprovalVerdict
  readonly reason?: string
  /** When it was decided (epoch ms). */
  readonly decidedAt: number
}

/** `decide()` refused; nothing changed. */
export interface ApprovalDecideRefused {
  readonly ok: false
  readonly code: ApprovalDecideErrorCode
  /** For people: says what was wrong (which field, or how the request ended). */
  readonly message: string
}

/** What `decide()` answers. It never throws. Frozen. */
export type ApprovalDecideResult = ApprovalDecided | ApprovalDecideRefused

/** A request was opened and waits for a decision. */
export interface ApprovalRequestedEvent {
  readonly type: 'requested'
  readonly approval: PendingApproval
}

/**
 * A request was decided: by a person through `decide()`, or denied by `dispose()` (its
 * reason then says the broker was disposed).
 */
export interface ApprovalDecidedEvent {
  readonly type: 'decided'
  readonly approval: PendingApproval
  readonly decision: ApprovalVerdict
  readonly reason?: string
  /** The deciding principal's role, when `decide()` was given one. */
  readonly role?: string
  /** Epoch ms. */
  readonly at: number
}

/** Nobody decided within `timeoutMs`; the call was denied. */
export interface ApprovalExpiredEvent {
  readonly type: 'expired'
  readonly approval: PendingApproval
  /** Epoch ms. */
  readonly at: number
}

/** The call was cancelled (its signal aborted) while it waited; the request is gone. */
export interface ApprovalWithdrawnEvent {
  readonly type: 'withdrawn'
  readonly approval: PendingApproval
  /** Epoch ms. */
  readonly at: number
}

/** Everything a subscriber hears, in the order it happened. Frozen. */
export type ApprovalEvent = ApprovalRequestedEvent | ApprovalDecidedEvent | ApprovalExpiredEvent | ApprovalWithdrawnEvent

/** A subscriber. Its throws and rejections are swallowed: it can never break the broker. */
export type ApprovalListener = (event: ApprovalEvent) => void

/** What a broker over a store measured in one `pending()` (docs/approvals.md, "Durable approvals"). */
export interface ApprovalListing {
  /** Records read. */
  readonly examined: number
  /** Records skipped as malformed (unreadable, oversized, not an approval record): never listed, never fatal. */
  readonly malformed: number
  /** `true` when the listing stopped at its bounds (records read or bytes), so some requests may be missing. */
  readonly truncated: boolean
}

/** What `pending()` takes. */
export interface ApprovalPendingOptions {
  /**
   * Only the requests of this agent's calls (a decider pinned to an agent; the global
   * layer's are left out too). Filtered while the store is read, so other agents' requests
   * never take the listing's 500 places. Must be a string (`INVALID_OPTIONS` otherwise).
   */
  readonly agent?: string
  /** Only this run's requests (its `run_code` call id): its plan's and its sub-calls'. Filtered as `agent` is. */
  readonly run?: string
}

/**
 * What `pending()` answers: the requests, an array as before, carrying the facts of this
 * very listing as `listing` (not enumerable: JSON and equality see the array alone). A
 * broker of `createApprovalBroker` always sets it; one of your own making may leave it out.
 */
export interface PendingApprovals extends ReadonlyArray<PendingApproval> {
  readonly listing?: ApprovalListing
}

/** Holds `ask` decisions in a store until a person answers them, they expire, or the call is cancelled. */
export interface ApprovalBroker {
  /**
   * The approval handler (`createToolRuntime({ approvals })` plugs it in). Opens one
   * request per call; resolves `true` on allow and rejects with a
   * `ToolError('DENIED_BY_APPROVAL')` whose message says why.
   */
  readonly handler: ApprovalHandler & {
    readonly acceptsPlans: boolean
    /** `true`: a cancelled call's promise settles only once its request has left `pending()` (the registry waits for it, up to 5 s). */
    readonly withdrawsOnAbort: true
  }
  /** The effective timeout (validated, default applied). */
  readonly timeoutMs: number
  /** The effective poll interval. */
  readonly pollIntervalMs: number
  /** The effective retention of settled records. */
  readonly retainSettledMs: number
  /**
   * The store's open requests (of every process sharing it), oldest first, at most
   * `MAX_LISTED_APPROVALS`; only `options.agent`'s and `options.run`'s when given. Its `listing` says what this
   * listing read and whether it was cut (`truncated`): read it there, not from
   * `lastListing`, which another caller's listing may have replaced meanwhile.
   */
  pending(options?: ApprovalPendingOptions): Promise<PendingApprovals>
  /**
   * Answers one request, in whichever process it waits: the first decision written to the
   * store wins (compare-and-set), a later one is refused as `APPROVAL_ALREADY_DECIDED`.
   * Refusals are answers; it rejects only when the store itself fails (`STORE_FAILED`,
   * `STORE_BUSY`), and then nothing was decided.
   */
  decide(id: string, input: ApprovalDecisionInput, by?: ApprovalDecider): Promise<ApprovalDecideResult>
  /**
   * What the last `pending()` to finish read, whoever called it; before the first, all zero.
   * @deprecated Two listings at once (a library caller beside `GET /v1/approvals`) replace
   * each other's: read the `listing` of the array `pending()` answered.
   */
  readonly lastListing: ApprovalListing
  /** Adds a listener; returns its idempotent unsubscribe. After `dispose()` a no-op. */
  subscribe(listener: ApprovalListener): () => void
  /** How many listeners are subscribed (a leak check: a closed stream must unsubscribe). */
  readonly subscriberCount: number
  /**
   * Stops this process's part: its waiting calls are denied here (their requests stay open
   * in the store, for another process or a restart), its timers and listeners are cleared.
   * Resolves once the store writes already started have landed. Idempotent.
   */
  dispose(): Promise<void>
}
