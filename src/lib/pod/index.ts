/**
 * The manifest layer of klet: pure logic that turns pod manifests (a static
 * pod directory, files, a URL body) into validated static pods, ConfigMaps
 * and Secrets, the way the API server and the kubelet's static pod source
 * would. Importing this module loads @kubernetes/client-node's generated
 * models (a few hundred ms), so commands import it only when they need it.
 */
export {
  loadManifests,
  prepareManifests,
  readManifestDir,
  readManifestFile,
  parseManifestText,
  ManifestError,
  InvalidManifestsError,
  manifestErrorsToError,
  MAX_MANIFEST_BYTES,
  MANIFEST_KINDS,
  type LoadManifestsOptions,
  type LoadedPod,
  type ManifestErrorInit,
  type ManifestObject,
  type ManifestSet,
  type ManifestSource,
  type ParsedManifests,
  type PrepareOptions,
} from './manifest.js';
export {
  applyConfigMapDefaults,
  applyPodDefaults,
  applySecretDefaults,
  cloneModel,
  volumeSources,
  DEFAULT_NAMESPACE,
  DEFAULT_SCHEDULER_NAME,
  DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
  DEFAULT_TERMINATION_MESSAGE_PATH,
  DEFAULT_VOLUME_FILE_MODE,
} from './defaults.js';
export {
  validateAnnotations,
  validateConfigMap,
  validateLabels,
  validateObjectMeta,
  validatePod,
  validatePodSpec,
  validateResourceRequirements,
  validateSecret,
  ENV_FIELD_PATHS,
  HOST_PATH_TYPES,
} from './validate.js';
export {
  addOrUpdateToleration,
  staticPodUID,
  toStaticPod,
  CONFIG_HASH_ANNOTATION,
  CONFIG_SEEN_ANNOTATION,
  CONFIG_SOURCE_ANNOTATION,
  type StaticPodOptions,
  type StaticPodResult,
  type StaticPodSource,
} from './static-pod.js';
export { decodeModel, modelAttributes, serializeModel, type AttributeType, type DecodeResult } from './decode.js';
export { FieldError, FieldPath, type FieldErrorType, type PathSegment } from './field.js';
export { Quantity, QuantityError, parseQuantity, quantityError, type QuantityFormat } from './quantity.js';
export { defaultImagePullPolicy, parseImageReference } from '../image/reference.js';
