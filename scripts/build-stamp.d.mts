/** Types of build-stamp.mjs (the builds' up-to-date check), for the tests that import it. */
export declare function hashInputs(root: string, inputs: readonly string[], options?: { skip?: readonly string[]; extra?: readonly unknown[] }): { hash: string; files: number }
export declare function isUpToDate(stampFile: string, hash: string): boolean
export declare function writeStamp(stampFile: string, hash: string): void
export declare function clearStamp(stampFile: string): void
