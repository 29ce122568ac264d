process.env.OCLIF_DISABLE_ENGINE_WARNING = '1';
const { execute } = await import('@oclif/core/execute');
await execute({ dir: new URL('./run.js', import.meta.url).href });
