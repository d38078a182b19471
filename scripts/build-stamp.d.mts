/** Types of build-stamp.mjs (the builds' up-to-date check), for the tests that import it. */
export declare function hashInputs(root: string, inputs: readonly string[], options?: { skip?: readonly string[]; extra?: readonly unknown[] }): { hash: string; files: number }
export declare function isUpToDate(stampFile: string, hash: string): boolean
export declare function writeStamp(stampFile: string, hash: string): void
export declare function clearStamp(stampFile: string): void
export declare const BUILD_INPUTS: readonly string[]
export declare const DEMO_INPUTS: readonly string[]
export declare const DEMO_OUTPUTS: readonly string[]
export declare const UP_TO_DATE: { readonly build: string; readonly demo: string }
export declare function packageInputsHash(root: string): string
export declare function demoInputsHash(root: string, dev?: boolean): string
export declare function missingExportTargets(root: string): string[]
export declare function packageUpToDate(root: string, hash?: string): boolean
export declare function demoUpToDate(root: string, dev?: boolean, hash?: string): boolean
