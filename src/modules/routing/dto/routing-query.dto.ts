import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';

/** GET /workspaces/{ws}/route-decisions. `before` and `capability` formats are checked by the service (400s). */
export class RouteDecisionsQuery {
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(200) limit: number = 50;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(1024) before?: string;
  @IsOptional() @IsString() capability?: string;
}
