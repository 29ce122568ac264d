import { Args, Flags } from '@oclif/core';
import { RuntimeCommand, outputFlags } from '../../base-command.js';

export default class ImagesImport extends RuntimeCommand<typeof ImagesImport> {
  static override summary = 'Import an OCI image layout archive into the container runtime.';
  static override description = `Loads a tar (or tar.gz) of an OCI image layout (oci-layout, index.json, blobs/) into containerd's k8s.io namespace, where CRI and pods see it. The image is named from the layout's org.opencontainers.image.ref.name annotation, or from --name. No registry is contacted.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> ./myapp-oci.tar',
    '<%= config.bin %> <%= command.id %> ./layout.tar --name localhost/myapp:1.0',
  ];
  static override args = {
    file: Args.string({ description: 'OCI image layout archive (.tar or .tar.gz)', required: true }),
  };
  static override flags = {
    ...outputFlags,
    name: Flags.string({ summary: 'Image reference to give the image (e.g. localhost/app:1.0).' }),
  };

  async run(): Promise<void> {
    const { args } = await this.parse(ImagesImport);
    const { inspectImageArchive, importImageArchive } = await import('../../lib/runtime/images.js');
    // Validate before anything else, so a bad file never starts a runtime.
    await inspectImageArchive(args.file);
    await this.cri();
    const { parseEndpoint } = await import('../../lib/cri/endpoint.js');
    const { socketPath } = parseEndpoint(this.flags['container-runtime-endpoint']);
    const res = await importImageArchive({ address: socketPath, file: args.file, name: this.flags.name });
    await this.printObject(res, () => res.refs.map((r) => `imported ${r}`).join('\n'));
  }
}
