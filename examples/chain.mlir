// The canonical ROI chain as the Python frontend emits it for a uint8 BGR frame: three crops, each
// resized to 16x16 (linear, so float32 from here on), scaled, shifted and saturated back to uint8.
// Result types are `none`: fkl-infer-types works them out.
%img = fkl.read "src" : !fkl.image<?x?x3xui8>
%roi = fkl.crop %img, rects [[30, 12, 60, 40], [40, 12, 60, 40], [53, 27, 60, 40]] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
%rs = fkl.resize %roi, size [16, 16], linear : !fkl.image<?x?x?xnone>
%m = fkl.mul %rs, [2.0, 2.0, 2.0] : !fkl.image<?x?x?xnone>
%s = fkl.sub %m, [1.0, 2.0, 3.0] : !fkl.image<?x?x?xnone>
%u8 = fkl.saturate_cast %s to ui8 : !fkl.image<?x?x?xnone>
fkl.write %u8, "dst" : !fkl.image<?x?x?xnone>
