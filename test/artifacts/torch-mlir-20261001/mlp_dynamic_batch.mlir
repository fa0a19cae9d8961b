module {
  func.func @main(%arg0: tensor<?x8xf32>) -> tensor<?x4xf32> {
    %cst = stablehlo.constant dense_resource<torch_tensor_4_torch.float32> : tensor<4xf32>
    %cst_0 = stablehlo.constant dense_resource<torch_tensor_4_16_torch.float32> : tensor<4x16xf32>
    %cst_1 = stablehlo.constant dense_resource<torch_tensor_16_torch.float32> : tensor<16xf32>
    %cst_2 = stablehlo.constant dense_resource<torch_tensor_16_8_torch.float32> : tensor<16x8xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_4 = arith.constant dense<1> : tensor<1xi64>
    %0 = shape.const_shape [16] : tensor<1xindex>
    %1 = shape.const_shape [4] : tensor<1xindex>
    %2 = stablehlo.transpose %cst_2, dims = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %3 = stablehlo.dot_general %arg0, %2, contracting_dims = [1] x [0] : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
    %4 = stablehlo.convert %cst_4 : (tensor<1xi64>) -> tensor<1xf32>
    %5 = stablehlo.reshape %4 : (tensor<1xf32>) -> tensor<f32>
    %6 = shape.shape_of %3 : tensor<?x16xf32> -> tensor<2xindex>
    %7 = stablehlo.dynamic_broadcast_in_dim %3, %6, dims = [0, 1] : (tensor<?x16xf32>, tensor<2xindex>) -> tensor<?x16xf32>
    %8 = stablehlo.dynamic_broadcast_in_dim %5, %6, dims = [] : (tensor<f32>, tensor<2xindex>) -> tensor<?x16xf32>
    %9 = stablehlo.multiply %7, %8 : tensor<?x16xf32>
    %10 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %11 = stablehlo.multiply %10, %cst_1 : tensor<16xf32>
    %12 = shape.shape_of %9 : tensor<?x16xf32> -> tensor<2xindex>
    %13 = shape.broadcast %12, %0 : tensor<2xindex>, tensor<1xindex> -> tensor<2xindex>
    %14 = stablehlo.dynamic_broadcast_in_dim %9, %13, dims = [0, 1] : (tensor<?x16xf32>, tensor<2xindex>) -> tensor<?x16xf32>
    %15 = stablehlo.dynamic_broadcast_in_dim %11, %13, dims = [1] : (tensor<16xf32>, tensor<2xindex>) -> tensor<?x16xf32>
    %16 = stablehlo.add %14, %15 : tensor<?x16xf32>
    %17 = shape.shape_of %16 : tensor<?x16xf32> -> tensor<2xindex>
    %18 = stablehlo.dynamic_broadcast_in_dim %cst_3, %17, dims = [] : (tensor<f32>, tensor<2xindex>) -> tensor<?x16xf32>
    %19 = stablehlo.maximum %16, %18 : tensor<?x16xf32>
    %20 = stablehlo.transpose %cst_0, dims = [1, 0] : (tensor<4x16xf32>) -> tensor<16x4xf32>
    %21 = stablehlo.dot_general %19, %20, contracting_dims = [1] x [0] : (tensor<?x16xf32>, tensor<16x4xf32>) -> tensor<?x4xf32>
    %22 = shape.shape_of %21 : tensor<?x4xf32> -> tensor<2xindex>
    %23 = stablehlo.dynamic_broadcast_in_dim %21, %22, dims = [0, 1] : (tensor<?x4xf32>, tensor<2xindex>) -> tensor<?x4xf32>
    %24 = stablehlo.dynamic_broadcast_in_dim %5, %22, dims = [] : (tensor<f32>, tensor<2xindex>) -> tensor<?x4xf32>
    %25 = stablehlo.multiply %23, %24 : tensor<?x4xf32>
    %26 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %27 = stablehlo.multiply %26, %cst : tensor<4xf32>
    %28 = shape.shape_of %25 : tensor<?x4xf32> -> tensor<2xindex>
    %29 = shape.broadcast %28, %1 : tensor<2xindex>, tensor<1xindex> -> tensor<2xindex>
    %30 = stablehlo.dynamic_broadcast_in_dim %25, %29, dims = [0, 1] : (tensor<?x4xf32>, tensor<2xindex>) -> tensor<?x4xf32>
    %31 = stablehlo.dynamic_broadcast_in_dim %27, %29, dims = [1] : (tensor<4xf32>, tensor<2xindex>) -> tensor<?x4xf32>
    %32 = stablehlo.add %30, %31 : tensor<?x4xf32>
    return %32 : tensor<?x4xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_4_torch.float32: "0x04000000A024B93D40AA013D00EDF3BA086D4ABD",
      torch_tensor_4_16_torch.float32: "0x0400000066F865BE40BAF2BDCE4F2E3E006BD4BADC7CFEBD022D44BE00946FBEEC1058BE70B44FBD56640C3E74670A3E02E576BE2EB01F3E8A5248BEF07B58BD1C9ACFBDF03C45BD100E49BDBAB865BE440A5DBE283C20BD80E1533BB896E8BDB8DEC03D3A6A66BEC0368ABCA221613E38D7D0BD362B673E386CB93DAE0767BE74F8213EF053ECBC708FE4BD14B64C3E54DF4EBEB0C2DB3CC06456BD16D0363E08EC8E3DCC04F63D40D1B43D003F76BD505A57BD00F752BE4CB60A3E26424B3E5C292F3EAC9334BE60AE363C907634BE88EC0CBE302C15BE34F9AE3DC48D18BE00BAB2BBA04F2C3C0406253EFA8341BE44BF2FBE3CA614BED62E333ECC0BB8BDE0EE573E",
      torch_tensor_16_torch.float32: "0x04000000714EFDBD0C5E94BEB0059ABDB5C69A3D16DB6BBE02A394BC3595813EE4DE14BD5DFD203C86DCF9BC2E8A923DCF32663E4A78AB3E30EA653EB9DCAB3E4477D1BC",
      torch_tensor_16_8_torch.float32: "0x0400000022792DBB9C36423EB1FC94BE1D3885BED6700BBEAB2AC23D578AE5BB40878F3EDE8300BD9799BF3D5DD3DABD1B548EBDC2EFACBE90C56FBE9F3D15BE4C94563C6B200F3E403B593EDE7075BE86A71DBEA77F033EF750963EE70395BD7A75873E1E6B69BD353C193DA1E8A33E20EDA7BEC5EA63BEAC4FB7BD661F0DBE9E669C3E85AA6ABE86A826BE53EF7CBE2089A9BE2D5653BE979A9B3E5E8C213E5F782F3E4952983C7B9C39BE6E01753D4D04A9BE68CC82BE4CA43ABE876C643E5D45543EF68F20BEF20251BCB38B673E12F5B33ECBAF0F3EA6A2433DF2BD723E522B55BE70ED863D65588CBE8AEC7ABEF2053BBE10D0233EFD98113E5B7456BEB8BFDA3DC5BF463E43C836BDCF2B5D3CAAC5A73DAE99603E4ED0AD3E6D7F8BBE1CAD04BEE7480E3EC4FB953E3C869D3E40B99F3E171A903D49699DBE2838053D4B7E62BEA4B3A8BE96D5A03ECBA3893E6492B4BEEC86873DC6F473BD5C4F6EBDC7B925BE65390B3ED06F56BE61B8043EFD15373E2B96813ECB5E073E4529B3BE76DA6ABE77C5343EE58C973DD5358DBE0B7850BE374BAA3EB8F2733EA3DB1DBE3F3DB6BD4D70ACBE123CD0BB775188BE67A18BBEE4959FBCEA6E593D0B4414BE5DD3563E8F505CBE6440A43EE51A783E88A698BE2536B4BD67B0823C8F49533D86BBAB3DFF120E3E4A7DAD3C2AA630BE0E502B3E81A4ADBE2E9556BE1842B5BD975A30BE"
    }
  }
#-}
