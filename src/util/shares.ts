/**
 * How a bounded resource is shared between callers: one caller (a token, a lane) may hold all
 * of it but a quarter, so another caller always finds room (docs/durability.md, "Shares").
 */

/** What one caller may hold of `total` places: `total` less a quarter (0 of 0, 1 of 1, 3 of 4, 192 of 256). */
export function shareLeavingAQuarter(total: number): number {
  return total - Math.floor(total / 4)
}
