/**
 * The fixed usage instructions that precede the generated SDK block.
 * @module
 */

/** Usage instructions for the TypeScript SDK (code runtimes reporting `language: 'typescript'`). */
export const TYPESCRIPT_SDK_INSTRUCTIONS = `## Writing code for run_code

\`run_code\` takes two required arguments: \`code\` — the body of an async TypeScript function — and \`description\`, a short summary of what the program does. The code is type-stripped before it runs, so use erasable syntax only: no \`enum\`, \`namespace\`, constructor parameter properties or other TypeScript that emits code. Type annotations are advisory; nothing checks them. Top-level \`await\` and \`return\` work. Inside the program:

- Call tools as \`await tools.name(args)\` — quoted access for exotic names: \`tools["my-tool"](args)\`. A tool whose arguments are all optional may be called as \`tools.name()\`, which passes \`{}\`. Every call resolves to the tool's typed canonical JSON value (\`ToolOutputMap\` below).
- Tool arguments must be lossless JSON: plain objects, arrays, strings, finite numbers, booleans and \`null\` — no \`undefined\` values, \`NaN\`, \`-0\`, \`BigInt\`, \`Date\`, \`Map\`, class instances or cycles. A call with such arguments rejects without running.
- A FAILED tool call (invalid arguments, a denial, an error inside the tool) rejects with \`ToolCallError\`, whose \`toolName\` identifies the failed tool, whose \`code\` says why (\`DENIED_BY_GATE\`, \`INVALID_ARGS\`, \`TOOL_FAILED\`, …) and whose \`message\` is human-readable — \`try/catch\` it to handle and continue.
- Independent read-only calls MAY overlap under \`Promise.all\`: calls that are safe to overlap run concurrently, a bounded number at a time; calls that change state run alone, in the order you made them. Sequence dependent work with \`await\`.
- Emit results with \`return\` and/or \`console.log(...)\` (\`console.error\`, \`warn\` and \`info\` too). ONLY what you print or return comes back to you — intermediate tool results never enter the conversation, so extract just what you need. A returned string comes back as-is; any other value as JSON.
- Reach the outside world only through \`tools\`: do not use Node.js or browser globals (\`require\`, \`process\`, \`fetch\`, \`document\`) — depending on the sandbox they are missing, empty or blocked. Every run starts fresh (nothing persists between runs) and has time and output limits.

The available tools:`

/** Usage instructions for the Python SDK (code runtimes reporting `language: 'python'`; none ships: integrators bring their own). */
export const PYTHON_SDK_INSTRUCTIONS = `## Writing code for run_code

\`run_code\` takes two required arguments: \`code\` — the body of an async Python function — and \`description\`, a short summary of what the program does. Top-level \`await\` and \`return\` work. Type hints are advisory; nothing checks them. Inside the program:

- Call tools as \`await tools.name(args)\` with a dict of arguments — subscript access for names that are not Python identifiers: \`await tools["my-tool"](args)\`. A tool whose arguments are all optional may be called as \`await tools.name()\`, which passes \`{}\`. Every call resolves to the tool's typed canonical JSON value (the \`...Output\` TypedDicts below): dicts, lists, \`str\`, \`int\`, \`float\`, \`bool\` and \`None\`.
- Tool arguments must be lossless JSON: dicts with string keys, lists, strings, finite numbers, booleans and \`None\`. A call with other arguments raises without running.
- A FAILED tool call (invalid arguments, a denial, an error inside the tool) raises \`ToolCallError\`, whose \`tool_name\` identifies the failed tool, whose \`code\` says why (\`DENIED_BY_GATE\`, \`INVALID_ARGS\`, \`TOOL_FAILED\`, …) and whose message (\`str(error)\`) is human-readable — \`try\`/\`except\` it to handle and continue.
- Independent read-only calls MAY overlap under \`asyncio.gather(...)\`: calls that are safe to overlap run concurrently, a bounded number at a time; calls that change state run alone, in the order you made them. Sequence dependent work with \`await\`.
- Emit results with \`return\` and/or \`print(...)\`. ONLY what you print or return comes back to you — intermediate tool results never enter the conversation, so extract just what you need. A returned string comes back as-is; any other value as JSON.
- Reach the outside world only through \`tools\`; do not rely on anything else the sandbox may expose. Every run starts fresh (nothing persists between runs) and has time and output limits.

The available tools:`
