/**
 * Tool discovery for large registries: a deterministic lexical search over tools ({@link
 * createCatalog}) and the compact index a prompt carries instead of the full SDK when the SDK would
 * not fit its budget ({@link renderCatalogIndex}).
 * @module
 */
export {
  createCatalog,
  DEFAULT_CLOSEST_LIMIT,
  DEFAULT_SEARCH_LIMIT,
  type Catalog,
  type CatalogEntry,
  type CatalogHit,
  type CatalogSearchOptions,
} from './catalog.js'
export {
  renderCatalogIndex,
  type CatalogIndexForm,
  type CatalogIndexText,
  type CatalogIndexTool,
  type RenderCatalogIndexOptions,
} from './index-text.js'
