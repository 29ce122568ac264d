/** The node's configuration (KubeletConfiguration + the kubelet's flags): one module, made once at start. */
export { AUTHORIZATION_MODES, type AuthorizationMode, type BuiltConfig, buildKubeletConfig, type ConfigPath, DEFAULTS, type KubeletConfig, type KubeletConfigInput } from './config.js';
export { type ConfigFile, parseConfigFile, readConfigFile } from './file.js';
export { kubeletConfigurationYaml, toKubeletConfiguration } from './print.js';
