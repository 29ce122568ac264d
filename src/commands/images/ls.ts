import { RuntimeCommand, outputFlags } from '../../base-command.js';
import { formatTable, humanBytes } from '../../lib/util/table.js';

export default class ImagesLs extends RuntimeCommand<typeof ImagesLs> {
  static override summary = 'List the images the container runtime has (like crictl images).';
  static override aliases = ['images:list'];
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> -o json'];
  static override flags = { ...outputFlags };

  async run(): Promise<void> {
    const cri = await this.cri();
    const { images } = await cri.listImages({});
    const rows = images.flatMap((img) => {
      const tags = img.repoTags.length > 0 ? img.repoTags : ['<none>:<none>'];
      return tags.map((t) => {
        const i = t.lastIndexOf(':');
        return { image: t.slice(0, i), tag: t.slice(i + 1), id: img.id, size: Number(img.size) };
      });
    });
    const report = images.map((img) => ({
      id: img.id,
      repoTags: img.repoTags,
      repoDigests: img.repoDigests,
      size: img.size.toString(),
      pinned: img.pinned,
    }));
    await this.printObject({ images: report }, () =>
      formatTable(
        ['IMAGE', 'TAG', 'IMAGE ID', 'SIZE'],
        rows.map((r) => [r.image, r.tag, r.id.replace(/^sha256:/, '').slice(0, 13), humanBytes(r.size)]),
      ),
    );
  }
}
