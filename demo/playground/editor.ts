/**
 * The playground's CodeMirror 6 editors: a TypeScript or Python program editor (highlighting,
 * `tools.` completion from the SDK's tool list, Ctrl/Cmd+Enter to run) and a JSON
 * arguments editor for native calls. Follows the system's light/dark preference.
 *
 * @module
 */
import { basicSetup, EditorView } from 'codemirror'
import type { CompletionContext, CompletionResult } from '@codemirror/autocomplete'
import { javascript, javascriptLanguage } from '@codemirror/lang-javascript'
import { json } from '@codemirror/lang-json'
import { python, pythonLanguage } from '@codemirror/lang-python'
import { Compartment, EditorState, Prec } from '@codemirror/state'
import type { Extension } from '@codemirror/state'
import { keymap } from '@codemirror/view'
import { oneDark } from '@codemirror/theme-one-dark'

/** A completion entry for `tools.<name>`. */
export interface ToolCompletion {
  readonly name: string
  readonly signature: string
  readonly description: string
}

/** A small handle over one editor. */
export interface PlaygroundEditor {
  readonly view: EditorView
  /** The current text. */
  text(): string
  /** Replaces the whole text. */
  setText(text: string): void
}

/** The program editor: a {@link PlaygroundEditor} that also switches its highlighting language. */
export interface ProgramEditor extends PlaygroundEditor {
  /** Highlights (and completes `tools.`) as TypeScript or Python. */
  setLanguage(language: 'typescript' | 'python'): void
}

const dark = window.matchMedia('(prefers-color-scheme: dark)')

function themeExtension(): Extension {
  return dark.matches ? oneDark : EditorView.theme({ '&': { backgroundColor: 'transparent' } })
}

function create(parent: HTMLElement, doc: string, extensions: readonly Extension[]): PlaygroundEditor {
  const theme = new Compartment()
  const view = new EditorView({
    parent,
    state: EditorState.create({ doc, extensions: [basicSetup, theme.of(themeExtension()), ...extensions] }),
  })
  dark.addEventListener('change', () => view.dispatch({ effects: theme.reconfigure(themeExtension()) }))
  return {
    view,
    text: () => view.state.doc.toString(),
    setText: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
  }
}

/**
 * The program editor, TypeScript until `setLanguage('python')`. `onRun` fires on
 * Ctrl/Cmd+Enter; `completions()` is read on each completion request so it follows the live tool set.
 */
export function createProgramEditor(
  parent: HTMLElement,
  doc: string,
  onRun: () => void,
  completions: () => readonly ToolCompletion[],
): ProgramEditor {
  const toolSource = (context: CompletionContext): CompletionResult | null => {
    const word = context.matchBefore(/\btools\.[\w$]*/)
    if (word === null) return null
    const dot = word.text.indexOf('.') + 1
    return {
      from: word.from + dot,
      options: completions().map((tool) => ({
        label: tool.name,
        type: 'function',
        detail: tool.signature,
        info: tool.description,
      })),
      validFor: /^[\w$]*$/,
    }
  }
  const languages = {
    typescript: [javascript({ typescript: true }), javascriptLanguage.data.of({ autocomplete: toolSource })],
    python: [python(), pythonLanguage.data.of({ autocomplete: toolSource })],
  }
  const language = new Compartment()
  const editor = create(parent, doc, [
    language.of(languages.typescript),
    Prec.highest(
      keymap.of([
        {
          key: 'Mod-Enter',
          run: () => {
            onRun()
            return true
          },
        },
      ]),
    ),
  ])
  return { ...editor, setLanguage: (name) => editor.view.dispatch({ effects: language.reconfigure(languages[name]) }) }
}

/** The JSON arguments editor; `onSubmit` fires on Ctrl/Cmd+Enter. */
export function createJsonEditor(parent: HTMLElement, doc: string, onSubmit: () => void): PlaygroundEditor {
  return create(parent, doc, [
    json(),
    Prec.highest(
      keymap.of([
        {
          key: 'Mod-Enter',
          run: () => {
            onSubmit()
            return true
          },
        },
      ]),
    ),
  ])
}
