package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
)

//go:embed static
var staticFS embed.FS

// Static is the site's CSS and JavaScript, served under /static/.
var Static, _ = fs.Sub(staticFS, "static")

var assetVersions = map[string]string{}

func init() {
	_ = fs.WalkDir(Static, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Static, p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		assetVersions[p] = hex.EncodeToString(h[:6])
		return nil
	})
}

// Asset is the URL of a static file, with its content hash as a version so
// that it can be cached for good.
func Asset(name string) string {
	return "/static/" + name + "?v=" + assetVersions[name]
}
