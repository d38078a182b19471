/**
 * The command samples of README.md and docs/*.md (test/unit/docs/doc-commands.test.ts):
 * every fenced block in a shell language (`sh`, `bash`, `shell`, `console`), every `$ `
 * command line of another fenced block (its continuation lines joined), and — in the
 * README, whose commands sit in tables and prose — every inline code span that starts
 * with `npm `, `npx ` or `PORT=`.
 *
 * @module
 */

/** One command sample: a shell block's commands, one `$ ` command, or one inline command. */
export interface CommandSample {
  readonly file: string
  /** 1-based line where it starts. */
  readonly line: number
  /** The commands, continuation lines joined with `\` + newline kept, comment-only lines dropped. */
  readonly commands: readonly string[]
  /** What the sample is keyed by in the check: its first command. */
  readonly key: string
}

const FENCE = /^(`{3,}|~{3,})\s*([A-Za-z]*)/
const SHELL = new Set(['sh', 'bash', 'shell', 'console'])

/** Joins a line ending in `\` with the next ones. */
function logicalLines(lines: readonly string[]): { readonly text: string; readonly offset: number }[] {
  const out: { text: string; offset: number }[] = []
  let current: { text: string; offset: number } | undefined
  lines.forEach((line, offset) => {
    if (current === undefined) current = { text: line, offset }
    else current.text += `\n${line}`
    if (!line.endsWith('\\')) {
      out.push(current)
      current = undefined
    }
  })
  if (current !== undefined) out.push(current)
  return out
}

/** The command samples of one markdown text (`inline`: README's inline `npm …` spans too). */
export function findCommandSamples(file: string, markdown: string, inline = false): CommandSample[] {
  const lines = markdown.split('\n')
  const samples: CommandSample[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!)
    if (open === null) {
      if (inline) {
        for (const match of lines[i]!.matchAll(/`((?:npm|npx|PORT=)[^`]*)`/g)) samples.push({ file, line: i + 1, commands: [match[1]!], key: match[1]! })
      }
      continue
    }
    const body: string[] = []
    let j = i + 1
    for (; j < lines.length && !lines[j]!.startsWith(open[1]!); j++) body.push(lines[j]!)
    if (SHELL.has(open[2]!.toLowerCase())) {
      const commands = logicalLines(body)
        .map((l) => l.text)
        .filter((text) => text.trim() !== '' && !text.trim().startsWith('#'))
      if (commands.length > 0) samples.push({ file, line: i + 1, commands, key: commands[0]! })
    } else {
      for (const { text, offset } of logicalLines(body)) {
        if (!text.startsWith('$ ')) continue
        const command = text.slice(2)
        samples.push({ file, line: i + 2 + offset, commands: [command], key: command })
      }
    }
    i = j
  }
  return samples
}
