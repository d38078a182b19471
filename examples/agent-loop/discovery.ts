/**
 * The Code Mode script for a registry too large for its SDK budget: the prompt carries
 * the catalog index, not the declarations, so the model first writes a short program
 * that finds the tools it needs with `catalog.search` and prints their declarations,
 * reads them, then sends the same task program as with a declared SDK ({@link taskProgramTurns}).
 *
 * The script does not assume the names it is after: it takes what the search printed,
 * checks that each need found the tool the task requires (a wrong hit would make the
 * second program fail) and fails the run otherwise.
 *
 * @module
 */
import { ToolError } from '../../src/index.js'
import type { ModelScript } from './loop.js'
import { taskProgramTurns } from './task.js'

/** Each need in plain words, and the tool the task program calls for it. */
export const DISCOVERY_NEEDS: readonly { readonly need: string; readonly tool: string }[] = [
  { need: 'list orders by status and creation date', tool: 'list_orders' },
  { need: 'get a customer by id', tool: 'get_customer' },
  { need: 'get a product by id', tool: 'get_product' },
]

/** The discovery program: the three best names per need, and the best one's declaration. */
export const DISCOVERY_PROGRAM = `for (const need of ${JSON.stringify(DISCOVERY_NEEDS.map((n) => n.need))}) {
  const hits = await catalog.search(need, { limit: 3 })
  console.log(need + ': ' + hits.map((h) => h.name).join(', '))
  console.log(hits[0].declaration)
}`

/** The tool names the discovery output declares, in order (`name(args…` at the start of a line). */
export function declaredNames(output: string): string[] {
  return [...output.matchAll(/^([A-Za-z_$][\w$]*)\(args\??: /gm)].map((match) => match[1]!)
}

/**
 * The Code Mode script against the catalog form: discover (one `run_code`), then solve
 * (one `run_code`), then answer. Throws `ToolError('TOOL_FAILED')` when a run fails or
 * the search did not find the tools the task needs.
 */
export function* discoveryScript(): ModelScript {
  const results = yield {
    type: 'tool-calls',
    text: 'The tools are not declared here; I will look up the ones I need.',
    calls: [{ id: 'call_1', name: 'run_code', arguments: { description: 'Find the order, customer and product tools', code: DISCOVERY_PROGRAM } }],
  }
  const found = results[0]
  if (found === undefined || found.isError) throw new ToolError('TOOL_FAILED', `scripted model: the discovery run failed: ${found?.content ?? 'no result'}`)
  const names = declaredNames(found.content)
  const wanted = DISCOVERY_NEEDS.map((n) => n.tool)
  if (names.join() !== wanted.join()) {
    throw new ToolError('TOOL_FAILED', `scripted model: the search found ${names.join(', ') || 'nothing'}, the task needs ${wanted.join(', ')}`)
  }
  yield* taskProgramTurns('Found them. Now the whole task in one program, printing only the answer.', 'call_2')
}
