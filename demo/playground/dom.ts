/**
 * A tiny DOM builder for the playground: elements from tag, attributes and children,
 * text always set as text (never HTML), so nothing a tool or program returns can
 * inject markup into the page.
 *
 * @module
 */

/** Attributes and properties of {@link h}; `class`, `data-*`, `aria-*` and plain attributes. */
export type Attributes = Record<string, string | number | boolean | undefined>

/** A child: a node, text, or nothing. */
export type Child = Node | string | number | false | null | undefined

/** Creates an element; `false`/`undefined` attributes are omitted, `true` sets an empty one. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: readonly (Child | readonly Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue
    element.setAttribute(name, value === true ? '' : String(value))
  }
  append(element, children)
  return element
}

/** Appends children (flattening one level of arrays) as nodes or text. */
export function append(parent: Node, children: readonly (Child | readonly Child[])[]): void {
  for (const child of children) {
    if (Array.isArray(child)) append(parent, child)
    else if (child instanceof Node) parent.appendChild(child)
    else if (child !== undefined && child !== null && child !== false) parent.appendChild(document.createTextNode(String(child)))
  }
}

/** Replaces every child of `parent`. */
export function replaceChildren(parent: Element, ...children: readonly (Child | readonly Child[])[]): void {
  parent.replaceChildren()
  append(parent, children)
}

/**
 * Makes `parent`'s children exactly `children`, in order, touching only what differs: a node
 * already in place stays (no removal, no re-insertion, no layout of the ones around it), a
 * node no longer wanted is removed, a new or moved one is inserted at its place. A redraw
 * that swaps one card of 200 costs one removal and one insertion, not 200 of each.
 */
export function syncChildren(parent: Element, children: readonly Element[]): void {
  const wanted = new Set<Node>(children)
  let current = parent.firstChild
  for (const child of children) {
    while (current !== null && current !== child && !wanted.has(current)) {
      const next = current.nextSibling
      current.remove()
      current = next
    }
    if (current === child) current = current.nextSibling
    else parent.insertBefore(child, current)
  }
  while (current !== null) {
    const next = current.nextSibling
    current.remove()
    current = next
  }
}

/** The element with `id`, typed; throws when the page is missing it (a build mistake, not a runtime state). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id)
  if (element === null) throw new Error(`playground: #${id} is missing from index.html`)
  return element as T
}

/** JSON for display: pretty, and total (anything JSON.stringify rejects prints as a note). */
export function showJson(value: unknown): string {
  try {
    const text = JSON.stringify(value, null, 2)
    return text === undefined ? String(value) : text
  } catch (error) {
    return `(unprintable: ${error instanceof Error ? error.message : String(error)})`
  }
}
