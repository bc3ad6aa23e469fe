/**
 * Paperlink's public API. Named exports only: what is here is supported; anything reached by a
 * deeper path is internal.
 */
export {
  loadTemplate,
  loadTemplateFile,
  folderAssets,
  renderTemplate,
  variables,
  missingVariables,
  type Template,
  type TemplateFormat,
  type XmlTemplate,
  type PdfTemplate,
  type AssetResolver,
  type LoadOptions,
  type RenderOptions,
} from './templates';
export { normalizeValues } from './templates/values';
export {
  PaperlinkError,
  ValidationError,
  TemplateError,
  MissingVariablesError,
  InvalidValueError,
  UnsupportedCharacterError,
  AuthenticationError,
  NotFoundError,
  ConflictError,
  RateLimitError,
  MalformedRequestError,
  StartupError,
  ERROR_CODES,
  STARTUP_CODES,
  type ErrorCode,
  type ErrorDetail,
  type SourceLocation,
} from './errors';
export { createService, type Service, type ServiceOptions } from './service';
export { loadConfig, type Config } from './config';
