/**
 * MCP content ↔ toolyard content (text and images); audio, resource links and embedded
 * resources become text placeholders.
 *
 * @module
 */
import type { JsonObject, JsonValue } from '../json/json-value.js'
import type { ContentBlock } from '../types.js'
import type { McpContentLike } from './mcp-types.js'
import { isRecord } from '../util/guards.js'

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

/**
 * Projects MCP content blocks (already lossless JSON) onto toolyard content blocks:
 * text → text, image → image, audio / resource_link / resource / unknown → a text
 * placeholder naming what was there. Total: malformed entries become placeholders.
 *
 * @example
 * ```ts
 * mcpContentToBlocks([{ type: 'text', text: 'hi' }, { type: 'audio', data: '…', mimeType: 'audio/wav' }])
 * // [{ type: 'text', text: 'hi' }, { type: 'text', text: '[audio audio/wav]' }]
 * ```
 */
export function mcpContentToBlocks(content: readonly JsonValue[]): ContentBlock[] {
  const blocks: ContentBlock[] = []
  for (const item of content) {
    if (!isRecord(item)) {
      blocks.push({ type: 'text', text: '[malformed MCP content]' })
      continue
    }
    const type = str(item.type) ?? '?'
    if (type === 'text' && typeof item.text === 'string') {
      blocks.push({ type: 'text', text: item.text })
    } else if (type === 'image' && typeof item.data === 'string' && typeof item.mimeType === 'string') {
      blocks.push({ type: 'image', data: item.data, mimeType: item.mimeType })
    } else if (type === 'audio') {
      blocks.push({ type: 'text', text: `[audio ${str(item.mimeType) ?? 'of unknown type'}]` })
    } else if (type === 'resource_link') {
      const name = str(item.name) ?? str(item.title)
      blocks.push({ type: 'text', text: `[resource link${name === undefined ? '' : ` ${name}`}: ${str(item.uri) ?? '?'}]` })
    } else if (type === 'resource' && isRecord(item.resource)) {
      const resource = item.resource
      const uri = str(resource.uri) ?? '?'
      if (typeof resource.text === 'string') blocks.push({ type: 'text', text: `[resource ${uri}]\n${resource.text}` })
      else blocks.push({ type: 'text', text: `[resource ${uri}${str(resource.mimeType) === undefined ? '' : ` (${str(resource.mimeType)})`}]` })
    } else {
      blocks.push({ type: 'text', text: `[${type} content]` })
    }
  }
  return blocks
}

/** Our content blocks as MCP content (both vocabularies share text and image). */
export function blocksToMcpContent(blocks: readonly ContentBlock[]): McpContentLike[] {
  return blocks.map((block) =>
    block.type === 'image' ? { type: 'image', data: block.data, mimeType: block.mimeType } : { type: 'text', text: block.text },
  )
}

/** The plain text of MCP content: every text block, joined by newlines. */
export function mcpContentText(content: readonly JsonValue[]): string {
  return content
    .flatMap((item) => (isRecord(item) && item.type === 'text' && typeof item.text === 'string' ? [item.text] : []))
    .join('\n')
}

/** Whether a JSON value is a (non-array) object, i.e. valid MCP `structuredContent`. */
export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return isRecord(value)
}
