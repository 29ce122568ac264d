const { execute } = await import('@oclif/core');
await execute({ dir: new URL('./run.js', import.meta.url).href });
