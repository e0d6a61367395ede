/*
 * tachyon_app.c - a small animation rendered with Debian's Tachyon ray-tracing library (MPICH
 * flavour), so that mana is tested against MPI code it did not write: the library, not this
 * program, makes every MPI call.
 *
 *   usage: tachyon_app [-f FRAMES] [-t THREADS]   (default: 24 frames, 2 threads)
 *
 * rt_initialize calls MPI_Init, rt_newscene MPI_Allgather (what each node has) and
 * rt_finalize MPI_Finalize.  The first rt_renderscene, after an MPI_Barrier, makes one
 * persistent request for each scanline another rank renders (MPI_Recv_init on rank 0,
 * MPI_Send_init on the others), which every frame starts again: rank 0 with MPI_Startall,
 * then MPI_Testsome after each line of its own, the others MPI_Start as each line is done,
 * and every rank ends the frame in MPI_Waitall.  rt_deletescene frees them
 * (MPI_Request_free): a checkpoint finds them active inside a frame and inactive between
 * frames.  The threaded flavours render each rank's lines with THREADS threads of their own;
 * the MPI calls stay on the main thread.
 *
 * The scene is fixed: a checkered floor, spheres with procedural textures (marble, wood,
 * checker, gradient), a mirror and a glass sphere, two point lights and a sky gradient; the
 * camera goes round it once over the frames.  After each frame rank 0 prints
 *   frame F: FNV1A64
 * the 64-bit FNV-1a hash of the 160x120 RGB image it holds.  Nothing printed depends on
 * time, process ids or the number of ranks or threads, so runs can be compared byte for
 * byte.
 *
 * Exit status: 0 done, 2 a usage error, 3 the library failed to start.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tachyon.h>

enum {
  WIDTH = 160,
  HEIGHT = 120,
  DEFAULT_FRAMES = 24,
  MAX_FRAMES = 100000,
  DEFAULT_THREADS = 2,
  MAX_THREADS = 64,
  /* Ambient occlusion sets how long a frame takes (over a tenth of a second of CPU at 2
     ranks on a slow machine), so that the run lasts a few seconds and a checkpoint can come
     while the ranks compute, not only while they wait; the MPI traffic of a frame is the
     same for any picture.  Its random samples give the same picture at any number of ranks
     and threads.  Antialiasing's jitter does not (it depends on which rank renders a line),
     nor does the grit texture (it differed between runs of the threaded flavour): neither
     is used. */
  AO_SAMPLES = 80,
  RAY_DEPTH = 8,
};

/* Tachyon reports through this callback whatever rt_verbose says: at level 100 the scene
   size and each frame's timings, on every frame; only its errors (level 200 and up) are
   worth a line, and on stderr, which is not compared. */
static void ui_message(int level, char *msg)
{
  if (level >= 200)
    fprintf(stderr, "tachyon_app: tachyon: %s\n", msg);
}

static apitexture plain(float r, float g, float b)
{
  apitexture t;
  memset(&t, 0, sizeof(t));
  t.texturefunc = RT_TEXTURE_CONSTANT;
  t.col = rt_color(r, g, b);
  t.shadowcast = 1;
  t.ambient = 0.1;
  t.diffuse = 0.8;
  t.specular = 0.0;
  t.opacity = 1.0;
  t.scale = rt_vector(1.0, 1.0, 1.0);
  t.uaxs = rt_vector(1.0, 0.0, 0.0);
  t.vaxs = rt_vector(0.0, 1.0, 0.0);
  t.waxs = rt_vector(0.0, 0.0, 1.0);
  return t;
}

static void *procedural(SceneHandle scene, int func, apitexture t, apivector ctr, double scale)
{
  t.texturefunc = func;
  t.ctr = ctr;
  t.scale = rt_vector(scale, scale, scale);
  return rt_texture(scene, &t);
}

static void build_scene(SceneHandle scene, unsigned char *image, int threads)
{
  rt_resolution(scene, WIDTH, HEIGHT);
  rt_rawimage_rgb24(scene, image);
  rt_verbose(scene, 0);
  /* The threaded flavours would otherwise take one thread per CPU of the machine. */
  rt_set_numthreads(scene, threads);
  rt_aa_maxsamples(scene, 0); /* see AO_SAMPLES */
  rt_camera_raydepth(scene, RAY_DEPTH);
  rt_camera_projection(scene, RT_PROJECTION_PERSPECTIVE);
  rt_camera_zoom(scene, 1.0);
  rt_shadermode(scene, RT_SHADER_FULL);
  rt_phong_shader(scene, RT_SHADER_BLINN);
  rt_image_clamp(scene);
  rt_background_gradient(scene, rt_vector(0.0, 1.0, 0.0), 1.0, 0.0, rt_color(0.2, 0.3, 0.7),
                         rt_color(0.9, 0.9, 1.0));
  rt_background_mode(scene, RT_BACKGROUND_TEXTURE_SKY_SPHERE);
  rt_ambient_occlusion(scene, AO_SAMPLES, rt_color(0.5, 0.5, 0.5));

  apitexture t = plain(0.9, 0.9, 0.9);
  rt_plane(scene, procedural(scene, RT_TEXTURE_3D_CHECKER, t, rt_vector(0, 0, 0), 1.0),
           rt_vector(0.0, -1.0, 0.0), rt_vector(0.0, 1.0, 0.0));

  t = plain(0.8, 0.3, 0.3);
  t.specular = 0.2;
  void *tex = procedural(scene, RT_TEXTURE_MARBLE, t, rt_vector(0, 0, 0), 0.5);
  rt_tex_phong(tex, 0.6, 40.0, RT_PHONG_PLASTIC);
  rt_sphere(scene, tex, rt_vector(-1.6, 0.0, 0.0), 1.0);

  t = plain(0.7, 0.5, 0.2);
  rt_sphere(scene, procedural(scene, RT_TEXTURE_WOOD, t, rt_vector(1.5, 0, 0.5), 0.3),
            rt_vector(1.5, -0.3, 0.5), 0.7);

  t = plain(0.3, 0.8, 0.4);
  rt_sphere(scene, procedural(scene, RT_TEXTURE_CYLINDRICAL_CHECKER, t, rt_vector(0, 0, 0), 1.0),
            rt_vector(0.2, -0.5, -1.8), 0.5);

  t = plain(0.5, 0.5, 0.9);
  rt_sphere(scene, procedural(scene, RT_TEXTURE_GRADIENT, t, rt_vector(0, 0, 2), 1.0),
            rt_vector(-0.3, -0.6, 2.0), 0.4);

  t = plain(0.95, 0.95, 0.95);
  t.diffuse = 0.1;
  t.specular = 0.85;
  tex = rt_texture(scene, &t);
  rt_tex_phong(tex, 0.9, 80.0, RT_PHONG_METAL);
  rt_sphere(scene, tex, rt_vector(0.0, 0.9, 0.3), 0.6);

  t = plain(0.9, 1.0, 0.9);
  t.diffuse = 0.2;
  t.specular = 0.1;
  t.opacity = 0.35;
  rt_sphere(scene, rt_texture(scene, &t), rt_vector(0.3, -0.55, 1.1), 0.45);

  t = plain(1.0, 1.0, 1.0);
  t.shadowcast = 0;
  rt_light(scene, rt_texture(scene, &t), rt_vector(-4.0, 6.0, -3.0), 0.1);
  t = plain(0.5, 0.5, 0.4);
  t.shadowcast = 0;
  rt_light(scene, rt_texture(scene, &t), rt_vector(5.0, 3.0, 4.0), 0.1);
}

/* Frame f of n: once round the scene at a fixed height, looking at its centre.  Tachyon
   wants the up vector perpendicular to the view direction. */
static void place_camera(SceneHandle scene, int f, int n)
{
  double a = 2.0 * 3.14159265358979323846 * f / n;
  apivector eye = rt_vector(6.0 * sin(a), 2.2, -6.0 * cos(a));
  apivector look = rt_vector(0.0, -0.2, 0.0);
  double vx = look.x - eye.x, vy = look.y - eye.y, vz = look.z - eye.z;
  double len = sqrt(vx * vx + vy * vy + vz * vz);
  vx /= len, vy /= len, vz /= len;
  double ux = -vy * vx, uy = 1.0 - vy * vy, uz = -vy * vz;
  double ulen = sqrt(ux * ux + uy * uy + uz * uz);
  rt_camera_position(scene, eye, rt_vector(vx, vy, vz), rt_vector(ux / ulen, uy / ulen, uz / ulen));
}

static uint64_t fnv1a64(const unsigned char *p, size_t n)
{
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3u;
  }
  return h;
}

static void usage(const char *prog)
{
  fprintf(stderr,
          "usage: %s [-f FRAMES] [-t THREADS]   (FRAMES 1..%d, default %d; THREADS 1..%d, "
          "default %d)\n",
          prog, MAX_FRAMES, DEFAULT_FRAMES, MAX_THREADS, DEFAULT_THREADS);
  exit(2);
}

static int count_arg(const char *s, int max, const char *prog)
{
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < 1 || v > max)
    usage(prog);
  return (int)v;
}

int main(int argc, char **argv)
{
  int frames = DEFAULT_FRAMES, threads = DEFAULT_THREADS;

  /* Before rt_initialize: every rank sees the same arguments and stops alike, without an MPI
     job to take down. */
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "-f") == 0 && a + 1 < argc)
      frames = count_arg(argv[++a], MAX_FRAMES, argv[0]);
    else if (strcmp(argv[a], "-t") == 0 && a + 1 < argc)
      threads = count_arg(argv[++a], MAX_THREADS, argv[0]);
    else
      usage(argv[0]);
  }

  rt_set_ui_message(ui_message);
  int rank = rt_initialize(&argc, &argv);
  if (rank < 0) {
    fprintf(stderr, "tachyon_app: rt_initialize failed\n");
    return 3;
  }

  /* Every rank renders its own scanlines into its own full-size image; only rank 0's is
     complete after a frame. */
  static unsigned char image[WIDTH * HEIGHT * 3];
  SceneHandle scene = rt_newscene();
  build_scene(scene, image, threads);

  for (int f = 0; f < frames; f++) {
    place_camera(scene, f, frames);
    rt_renderscene(scene);
    /* Flushed at once: a checkpoint may come at any MPI call of the next frame, and a line
       still in the stdio buffer would be saved in the image and printed twice, by the killed
       run at exit and again by the restarted one. */
    if (rank == 0) {
      printf("frame %d: %016llx\n", f, (unsigned long long)fnv1a64(image, sizeof(image)));
      fflush(stdout);
    }
  }

  rt_deletescene(scene);
  rt_finalize();
  return 0;
}
