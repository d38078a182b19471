/**
 * The portable demo tool set used by the examples, benchmarks, the playground and the
 * edge worker: an in-memory workspace (list, read, write, edit, grep, glob) and a
 * deterministic shop data set (customers, products, orders). No `node:*` imports.
 *
 * @module
 */
import type { AnyToolDefinition, Disposer } from '../../src/types.js'
import { createShopData, createShopTools, type ShopData, type ShopDataOptions } from './shop.js'
import { SEED_FILES, createWorkspace, createWorkspaceTools, type Workspace } from './workspace.js'

export { GLOB_WORK_BUDGET, GREP_WORK_BUDGET, SEED_FILES, createWorkspace, createWorkspaceTools, normalizePath, type Workspace } from './workspace.js'
export { MAX_PATTERN_LENGTH, MAX_STATES, compileGlob, compileRegex, workBudget, type Matcher, type WorkBudget } from './matcher.js'
export {
  createShopData,
  createShopTools,
  type Customer,
  type CustomerTier,
  type Order,
  type OrderItem,
  type OrderStatus,
  type Product,
  type ShopData,
  type ShopDataOptions,
} from './shop.js'

/** Options for {@link createDemoTools}. */
export interface DemoToolsOptions {
  /** The workspace's initial files (default {@link SEED_FILES}). */
  readonly files?: Readonly<Record<string, string>>
  /** Shop data options (seed and sizes). */
  readonly shop?: ShopDataOptions
  /** Which groups to include (default both). */
  readonly include?: readonly ('workspace' | 'shop')[]
  /** Hears every workspace write, with all the files after it (to keep them somewhere durable). */
  readonly onWorkspaceWrite?: (files: ReadonlyMap<string, string>) => void
}

/** A fresh demo tool set and the state behind it. */
export interface DemoTools {
  /** Every tool definition, ready to register. */
  readonly tools: AnyToolDefinition[]
  /** The in-memory workspace the file tools act on (inspect it in tests). */
  readonly workspace: Workspace
  /** The shop data the shop tools read. */
  readonly shop: ShopData
}

/** Creates the demo tools over fresh state: two calls never share a workspace. */
export function createDemoTools(options: DemoToolsOptions = {}): DemoTools {
  const include = new Set(options.include ?? ['workspace', 'shop'])
  const workspace = createWorkspace(options.files ?? SEED_FILES, options.onWorkspaceWrite)
  const shop = createShopData(options.shop)
  const tools = [
    ...(include.has('workspace') ? createWorkspaceTools(workspace) : []),
    ...(include.has('shop') ? createShopTools(shop) : []),
  ]
  return { tools, workspace, shop }
}

/** Anything tools can be registered in (a `ToolRuntime` or an agent's `AgentTools`). */
export interface ToolRegistrationScope {
  register(definition: AnyToolDefinition): Disposer
}

/**
 * Registers a fresh demo tool set in `scope`; the returned disposer unregisters them
 * all. If a registration throws, the ones already made are undone before rethrowing.
 */
export function registerDemoTools(scope: ToolRegistrationScope, options?: DemoToolsOptions): Disposer {
  const { tools } = createDemoTools(options)
  const disposers: Disposer[] = []
  const disposeAll = (): void => {
    for (const dispose of disposers.splice(0).reverse()) dispose()
  }
  try {
    for (const tool of tools) disposers.push(scope.register(tool))
  } catch (error) {
    disposeAll()
    throw error
  }
  return disposeAll
}
